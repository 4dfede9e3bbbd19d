-- The pair-room API's tables (lab.pairroom), shaped like the article's pair-programming service. The schema belongs to
-- these files, not to Hibernate (ddl-auto=none). Lookups by room use the indexes in pair-room-indexes.sql, which a
-- step may drop (pair-room-drop-indexes.sql); primary keys and unique constraints stay.
CREATE TABLE pair_room (
    id          bigserial PRIMARY KEY,
    access_code varchar(32) NOT NULL UNIQUE,
    status      varchar(16) NOT NULL,
    navigator   varchar(64) NOT NULL,
    driver      varchar(64) NOT NULL,
    created_at  timestamp NOT NULL DEFAULT now(),
    updated_at  timestamp NOT NULL DEFAULT now()
);
CREATE TABLE todo (
    id           bigserial PRIMARY KEY,
    pair_room_id bigint NOT NULL REFERENCES pair_room (id),
    content      varchar(255) NOT NULL,
    is_checked   boolean NOT NULL DEFAULT false,
    sort_order   integer NOT NULL DEFAULT 0
);
CREATE TABLE category (
    id           bigserial PRIMARY KEY,
    pair_room_id bigint NOT NULL REFERENCES pair_room (id),
    name         varchar(64) NOT NULL
);
CREATE TABLE reference_link (
    id           bigserial PRIMARY KEY,
    pair_room_id bigint NOT NULL REFERENCES pair_room (id),
    category_id  bigint REFERENCES category (id),
    url          varchar(512) NOT NULL,
    created_at   timestamp NOT NULL DEFAULT now()
);
CREATE TABLE timer (
    id           bigserial PRIMARY KEY,
    pair_room_id bigint NOT NULL UNIQUE REFERENCES pair_room (id),
    duration_ms  bigint NOT NULL,
    remaining_ms bigint NOT NULL,
    is_active    boolean NOT NULL DEFAULT false
);
