DROP INDEX IF EXISTS todo_pair_room;
DROP INDEX IF EXISTS category_pair_room;
DROP INDEX IF EXISTS reference_link_pair_room;
