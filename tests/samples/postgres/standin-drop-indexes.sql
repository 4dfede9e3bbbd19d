DROP INDEX IF EXISTS message_room_created;
