-- lab.rows rows per table (the harness SETs it first), deterministic: room n has access code 'R' || n (so a load
-- script can read an existing room as R${vu}), one to-do, category, link and timer of its own.
INSERT INTO pair_room (id, access_code, status, navigator, driver, created_at, updated_at)
SELECT n, 'R' || n, (ARRAY['READY', 'IN_PROGRESS', 'COMPLETED'])[1 + n % 3], 'navigator ' || n, 'driver ' || n,
       timestamp '2024-10-01' + n * interval '1 second', timestamp '2024-10-01' + n * interval '1 second'
FROM generate_series(1, current_setting('lab.rows')::int) AS n;
INSERT INTO todo (id, pair_room_id, content, is_checked, sort_order)
SELECT n, n, 'todo ' || n, n % 2 = 0, 1 FROM generate_series(1, current_setting('lab.rows')::int) AS n;
INSERT INTO category (id, pair_room_id, name)
SELECT n, n, 'category ' || n FROM generate_series(1, current_setting('lab.rows')::int) AS n;
INSERT INTO reference_link (id, pair_room_id, category_id, url, created_at)
SELECT n, n, n, 'https://example.org/' || n, timestamp '2024-10-01' + n * interval '1 second'
FROM generate_series(1, current_setting('lab.rows')::int) AS n;
INSERT INTO timer (id, pair_room_id, duration_ms, remaining_ms, is_active)
SELECT n, n, 600000, 600000, false FROM generate_series(1, current_setting('lab.rows')::int) AS n;
-- New rows (the API's) take ids after the generated ones.
SELECT setval(pg_get_serial_sequence(t, 'id'), current_setting('lab.rows')::int)
FROM unnest(ARRAY['pair_room', 'todo', 'category', 'reference_link', 'timer']) AS t;
