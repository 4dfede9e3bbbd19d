-- lab.rows rows per table (SET by the harness before this file runs).
INSERT INTO room (id, name, created_at)
SELECT n, 'room ' || n, timestamptz '2025-01-01' + n * interval '1 second'
FROM generate_series(1, current_setting('lab.rows')::int) AS n;
INSERT INTO message (id, room_id, body, created_at)
SELECT n, 1 + (n::bigint * 7919) % current_setting('lab.rows')::int, md5(n::text), timestamptz '2025-01-01' + n * interval '1 second'
FROM generate_series(1, current_setting('lab.rows')::int) AS n;
