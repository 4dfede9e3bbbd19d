-- The lookups by room that the API makes; a step may drop them (pair-room-drop-indexes.sql) to see what a missing
-- index costs at a million rows.
CREATE INDEX IF NOT EXISTS todo_pair_room ON todo (pair_room_id);
CREATE INDEX IF NOT EXISTS category_pair_room ON category (pair_room_id);
CREATE INDEX IF NOT EXISTS reference_link_pair_room ON reference_link (pair_room_id);
