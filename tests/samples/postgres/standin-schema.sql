-- A stand-in for the pair-room SQL set (sample-server/src/main/resources/db/pair-room-*.sql), for the postgres kind's
-- tests only: two tables, rows per table from lab.rows, one droppable index.
CREATE TABLE room (
    id bigint PRIMARY KEY,
    name text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE TABLE message (
    id bigint PRIMARY KEY,
    room_id bigint NOT NULL REFERENCES room (id),
    body text NOT NULL,
    created_at timestamptz NOT NULL
);
