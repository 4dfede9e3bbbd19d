CREATE INDEX message_room_created ON message (room_id, created_at);
