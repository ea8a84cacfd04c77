// SQLite's side of the `bulk-commit` benchmark in plain C, with no Python in the loop: what
// sqlite_bulk_commit.py (next to this file, run by BulkCommit.swift) does, through the C API.
// The same catalogue as the Swift side (76,923 artists, 2 albums each, 5 songs per album:
// 999,999 rows), the same schema (tables, UNIQUE keys, foreign keys on, indexes on
// album.artist and song.album), the same values, one transaction per 769 artists (the
// Swift side's change sets of 9,997 objects), WAL, synchronous=FULL then OFF in each of
// three rounds, a fresh database file each time. The rows and their strings are built
// before the clock starts; the statements are prepared once per database and each row is
// bound (text as SQLITE_STATIC: the strings outlive the statements) and stepped. The clock
// runs from the first BEGIN to the last COMMIT; wall (CLOCK_MONOTONIC) and processor
// (CLOCK_PROCESS_CPUTIME_ID, as Python's time.process_time) time, the median of the rounds.
// After each timed run the contents are checked outside the clock: rows per table, the sums
// of the keys and of every other column, against the rows the Swift side's change sets hold
// (object number = key, 1...n per entity), and PRAGMA foreign_key_check.
//
// With --rowid, a variant the Python script does not have: the integer keys are the rowid
// (artist_id, album_id, song_id INTEGER PRIMARY KEY; foreign keys refer to them), with no
// separate UNIQUE column and so no separate unique index.
//
//   cc -O2 Benchmarks/Store/sqlite_bulk_commit.c -lsqlite3 -o /tmp/sqlite-bulk-commit
//   /tmp/sqlite-bulk-commit [--rowid] [--quick] [--rounds N] [DIRECTORY]
//
// DIRECTORY (default: a new one under $TMPDIR or /tmp, removed afterwards) holds
// catalogue.sqlite, as the Python script's. --quick: 4,000 artists (52,000 rows), one round,
// as `strata-benchmarks --quick`. It prints JSON shaped like the Python script's on
// standard output, then a summary with the medians and the contents on standard error.
//
// Not part of the Swift package (excluded from the strata-benchmarks target).
#define _GNU_SOURCE
#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { ALBUMS_PER_ARTIST = 2, SONGS_PER_ALBUM = 5, OBJECTS_PER_ARTIST = 1 + ALBUMS_PER_ARTIST * (1 + SONGS_PER_ALBUM) };

typedef struct { int64_t key; char name[32]; } ArtistRow;
typedef struct { int64_t key, year, artist; char title[32]; } AlbumRow;
typedef struct { int64_t key, duration, album; double rating; int has_rating; char title[32]; } SongRow;

static ArtistRow *artists;
static AlbumRow *albums;
static SongRow *songs;
static int64_t artist_count, album_count, song_count, artists_per_batch;
static int rowid_keys;

static void fail(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fputs("sqlite_bulk_commit: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    exit(1);
}

static void check(sqlite3 *db, int rc, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) fail("%s: %s", what, sqlite3_errmsg(db));
}

static double clock_seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void exec(sqlite3 *db, const char *sql) {
    char *message = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) fail("%s: %s", sql, message);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *statement;
    check(db, sqlite3_prepare_v2(db, sql, -1, &statement, NULL), sql);
    return statement;
}

static void step_and_reset(sqlite3 *db, sqlite3_stmt *statement) {
    if (sqlite3_step(statement) != SQLITE_DONE) fail("%s: %s", sqlite3_sql(statement), sqlite3_errmsg(db));
    sqlite3_reset(statement);
}

/// The rows, as sqlite_bulk_commit.py's batches() (and BulkCommit.changeSets) make them:
/// artist a has albums 2a-1 and 2a, album b has songs 5b-4 ... 5b.
static void build_rows(void) {
    album_count = artist_count * ALBUMS_PER_ARTIST;
    song_count = album_count * SONGS_PER_ALBUM;
    artists = malloc(sizeof *artists * artist_count);
    albums = malloc(sizeof *albums * album_count);
    songs = malloc(sizeof *songs * song_count);
    if (!artists || !albums || !songs) fail("out of memory");
    for (int64_t a = 1; a <= artist_count; a++) {
        ArtistRow *artist = &artists[a - 1];
        artist->key = a;
        snprintf(artist->name, sizeof artist->name, "Artist %lld", (long long)a);
        for (int k = 0; k < ALBUMS_PER_ARTIST; k++) {
            int64_t b = (a - 1) * ALBUMS_PER_ARTIST + k + 1;
            AlbumRow *album = &albums[b - 1];
            album->key = b;
            album->year = 1960 + b % 60;
            album->artist = a;
            snprintf(album->title, sizeof album->title, "Album %lld", (long long)b);
            for (int j = 0; j < SONGS_PER_ALBUM; j++) {
                int64_t s = (b - 1) * SONGS_PER_ALBUM + j + 1;
                SongRow *song = &songs[s - 1];
                song->key = s;
                song->duration = 120000 + (s * 7919) % 240000;
                song->has_rating = s % 4 != 0;
                song->rating = song->has_rating ? (double)(s % 50) / 10 : 0;
                song->album = b;
                snprintf(song->title, sizeof song->title, "Song %lld", (long long)s);
            }
        }
    }
}

static void remove_database(const char *path) {
    static const char *suffixes[] = {"", "-wal", "-shm"};
    char name[4096];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
        if (unlink(name) != 0 && errno != ENOENT) fail("cannot remove %s: %s", name, strerror(errno));
    }
}

/// What a table holds: its row count and the sums of its columns (a rating as rating*10).
typedef struct { int64_t values[8]; } Contents;

// The rowid is `id` with separate key columns, the key itself with --rowid.
static const char *check_queries[3] = {
    "SELECT count(*), sum(rowid), sum(artist_id), sum(length(name)) FROM artist",
    "SELECT count(*), sum(rowid), sum(album_id), sum(year), sum(artist), sum(length(title)) FROM album",
    "SELECT count(*), sum(rowid), sum(song_id), sum(duration), count(rating), sum(CAST(round(rating * 10) AS INTEGER)),"
    " sum(album), sum(length(title)) FROM song",
};
static const int check_columns[3] = {4, 6, 8};
static const char *table_names[3] = {"artist", "album", "song"};
static const char *column_names[3][8] = {
    {"rows", "sum(rowid)", "sum(artist_id)", "sum(length(name))"},
    {"rows", "sum(rowid)", "sum(album_id)", "sum(year)", "sum(artist)", "sum(length(title))"},
    {"rows", "sum(rowid)", "sum(song_id)", "sum(duration)", "count(rating)", "sum(rating*10)", "sum(album)", "sum(length(title))"},
};

static void stored_contents(sqlite3 *db, Contents contents[3]) {
    for (int t = 0; t < 3; t++) {
        sqlite3_stmt *statement = prepare(db, check_queries[t]);
        if (sqlite3_step(statement) != SQLITE_ROW) fail("%s: %s", check_queries[t], sqlite3_errmsg(db));
        for (int c = 0; c < check_columns[t]; c++) contents[t].values[c] = sqlite3_column_int64(statement, c);
        sqlite3_finalize(statement);
    }
    sqlite3_stmt *statement = prepare(db, "PRAGMA foreign_key_check");
    if (sqlite3_step(statement) != SQLITE_DONE) fail("PRAGMA foreign_key_check reports a violation");
    sqlite3_finalize(statement);
}

/// The same figures computed from the definition of the rows, not from the prepared arrays:
/// what the Swift side's change sets hold (object number = key, 1...n per entity).
static void expected_contents(Contents contents[3]) {
    memset(contents, 0, sizeof(Contents) * 3);
    char text[32];
    for (int64_t a = 1; a <= artist_count; a++) {
        int64_t *v = contents[0].values;
        v[0] += 1, v[1] += a, v[2] += a, v[3] += snprintf(text, sizeof text, "Artist %lld", (long long)a);
    }
    for (int64_t b = 1; b <= album_count; b++) {
        int64_t *v = contents[1].values;
        v[0] += 1, v[1] += b, v[2] += b, v[3] += 1960 + b % 60, v[4] += (b + ALBUMS_PER_ARTIST - 1) / ALBUMS_PER_ARTIST;
        v[5] += snprintf(text, sizeof text, "Album %lld", (long long)b);
    }
    for (int64_t s = 1; s <= song_count; s++) {
        int64_t *v = contents[2].values;
        v[0] += 1, v[1] += s, v[2] += s, v[3] += 120000 + (s * 7919) % 240000;
        if (s % 4 != 0) v[4] += 1, v[5] += s % 50;
        v[6] += (s + SONGS_PER_ALBUM - 1) / SONGS_PER_ALBUM;
        v[7] += snprintf(text, sizeof text, "Song %lld", (long long)s);
    }
}

typedef struct { double seconds, processor_seconds; int64_t objects; } Outcome;

static Outcome commit_all(const char *path, const char *synchronous, Contents contents[3]) {
    remove_database(path);
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
        fail("cannot open %s: %s", path, sqlite3_errmsg(db));
    exec(db, "PRAGMA journal_mode=WAL");
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA synchronous=%s", synchronous);
    exec(db, pragma);
    exec(db, "PRAGMA foreign_keys=ON");
    if (rowid_keys) {
        exec(db, "CREATE TABLE artist(artist_id INTEGER PRIMARY KEY, name TEXT NOT NULL)");
        exec(db, "CREATE TABLE album(album_id INTEGER PRIMARY KEY, title TEXT NOT NULL, year INTEGER NOT NULL,"
                 " artist INTEGER NOT NULL REFERENCES artist(artist_id))");
        exec(db, "CREATE TABLE song(song_id INTEGER PRIMARY KEY, title TEXT NOT NULL, duration INTEGER NOT NULL, rating REAL,"
                 " album INTEGER NOT NULL REFERENCES album(album_id))");
    } else {
        exec(db, "CREATE TABLE artist(id INTEGER PRIMARY KEY, artist_id INTEGER NOT NULL UNIQUE, name TEXT NOT NULL)");
        exec(db, "CREATE TABLE album(id INTEGER PRIMARY KEY, album_id INTEGER NOT NULL UNIQUE, title TEXT NOT NULL,"
                 " year INTEGER NOT NULL, artist INTEGER NOT NULL REFERENCES artist(id))");
        exec(db, "CREATE TABLE song(id INTEGER PRIMARY KEY, song_id INTEGER NOT NULL UNIQUE, title TEXT NOT NULL,"
                 " duration INTEGER NOT NULL, rating REAL, album INTEGER NOT NULL REFERENCES album(id))");
    }
    exec(db, "CREATE INDEX album_artist ON album(artist)");
    exec(db, "CREATE INDEX song_album ON song(album)");

    sqlite3_stmt *begin = prepare(db, "BEGIN"), *commit = prepare(db, "COMMIT");
    sqlite3_stmt *insert_artist = prepare(db, rowid_keys ? "INSERT INTO artist VALUES (?, ?)" : "INSERT INTO artist VALUES (?, ?, ?)");
    sqlite3_stmt *insert_album = prepare(db, rowid_keys ? "INSERT INTO album VALUES (?, ?, ?, ?)" : "INSERT INTO album VALUES (?, ?, ?, ?, ?)");
    sqlite3_stmt *insert_song = prepare(db, rowid_keys ? "INSERT INTO song VALUES (?, ?, ?, ?, ?)" : "INSERT INTO song VALUES (?, ?, ?, ?, ?, ?)");
    // With --rowid the key is bound once, as the rowid; otherwise twice, as id and as the UNIQUE key.
    int first = rowid_keys ? 2 : 3;

    double wall = clock_seconds(CLOCK_MONOTONIC), processor = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    for (int64_t from = 0; from < artist_count; from += artists_per_batch) {
        int64_t to = from + artists_per_batch < artist_count ? from + artists_per_batch : artist_count;
        step_and_reset(db, begin);
        for (int64_t i = from; i < to; i++) {
            const ArtistRow *row = &artists[i];
            sqlite3_bind_int64(insert_artist, 1, row->key);
            if (!rowid_keys) sqlite3_bind_int64(insert_artist, 2, row->key);
            sqlite3_bind_text(insert_artist, first, row->name, -1, SQLITE_STATIC);
            step_and_reset(db, insert_artist);
        }
        for (int64_t i = from * ALBUMS_PER_ARTIST; i < to * ALBUMS_PER_ARTIST; i++) {
            const AlbumRow *row = &albums[i];
            sqlite3_bind_int64(insert_album, 1, row->key);
            if (!rowid_keys) sqlite3_bind_int64(insert_album, 2, row->key);
            sqlite3_bind_text(insert_album, first, row->title, -1, SQLITE_STATIC);
            sqlite3_bind_int64(insert_album, first + 1, row->year);
            sqlite3_bind_int64(insert_album, first + 2, row->artist);
            step_and_reset(db, insert_album);
        }
        for (int64_t i = from * ALBUMS_PER_ARTIST * SONGS_PER_ALBUM; i < to * ALBUMS_PER_ARTIST * SONGS_PER_ALBUM; i++) {
            const SongRow *row = &songs[i];
            sqlite3_bind_int64(insert_song, 1, row->key);
            if (!rowid_keys) sqlite3_bind_int64(insert_song, 2, row->key);
            sqlite3_bind_text(insert_song, first, row->title, -1, SQLITE_STATIC);
            sqlite3_bind_int64(insert_song, first + 1, row->duration);
            if (row->has_rating) sqlite3_bind_double(insert_song, first + 2, row->rating);
            else sqlite3_bind_null(insert_song, first + 2);
            sqlite3_bind_int64(insert_song, first + 3, row->album);
            step_and_reset(db, insert_song);
        }
        step_and_reset(db, commit);
    }
    Outcome outcome = {
        .seconds = clock_seconds(CLOCK_MONOTONIC) - wall,
        .processor_seconds = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - processor,
    };

    sqlite3_finalize(begin), sqlite3_finalize(commit);
    sqlite3_finalize(insert_artist), sqlite3_finalize(insert_album), sqlite3_finalize(insert_song);
    stored_contents(db, contents);
    outcome.objects = contents[0].values[0] + contents[1].values[0] + contents[2].values[0];
    check(db, sqlite3_close(db), "close");
    remove_database(path);
    return outcome;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *values, int count) {
    double sorted[count];
    memcpy(sorted, values, sizeof sorted);
    qsort(sorted, count, sizeof *sorted, compare_doubles);
    return count % 2 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2;
}

static void print_list(const char *key, const double *values, int count) {
    printf("\"%s\": [", key);
    for (int i = 0; i < count; i++) printf("%s%.6f", i ? ", " : "", values[i]);
    printf("]");
}

int main(int argc, char **argv) {
    int rounds = 3, quick = 0;
    const char *directory = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rowid") == 0) rowid_keys = 1;
        else if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !directory) directory = argv[i];
        else fail("usage: sqlite_bulk_commit [--rowid] [--quick] [--rounds N] [DIRECTORY]");
    }
    // As BulkCommit.run: 1,000,000 (quick: 52,000) objects / 13 per artist, 10,000 / 13 artists per change set.
    int64_t objects = quick ? 52000 : 1000000;
    if (quick) rounds = 1;
    if (rounds < 1) fail("--rounds needs a positive number");
    artist_count = objects / OBJECTS_PER_ARTIST;
    artists_per_batch = 10000 / OBJECTS_PER_ARTIST;

    char made[4096] = "";
    if (!directory) {
        const char *tmp = getenv("TMPDIR");
        snprintf(made, sizeof made, "%s/sqlite-bulk-commit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(made)) fail("cannot create a directory in %s: %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
        directory = made;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/catalogue.sqlite", directory);

    build_rows();
    Contents expected[3], stored[3];
    expected_contents(expected);
    int64_t expected_objects = artist_count * OBJECTS_PER_ARTIST;

    const char *modes[2] = {"full", "off"}, *settings[2] = {"FULL", "OFF"};
    double seconds[2][rounds], processor_seconds[2][rounds];
    int64_t stored_objects[2] = {0, 0};
    for (int round = 0; round < rounds; round++) {
        for (int m = 0; m < 2; m++) {
            Outcome outcome = commit_all(path, settings[m], stored);
            seconds[m][round] = outcome.seconds;
            processor_seconds[m][round] = outcome.processor_seconds;
            stored_objects[m] = outcome.objects;
            for (int t = 0; t < 3; t++)
                for (int c = 0; c < check_columns[t]; c++)
                    if (stored[t].values[c] != expected[t].values[c])
                        fail("synchronous=%s, round %d: %s %s is %lld, expected %lld", settings[m], round + 1, table_names[t],
                             column_names[t][c], (long long)stored[t].values[c], (long long)expected[t].values[c]);
        }
    }
    if (made[0] && rmdir(made) != 0) fail("cannot remove %s: %s", made, strerror(errno));

    printf("{\"sqlite_version\": \"%s\", \"client\": \"C\", \"variant\": \"%s\",\n \"modes\": {", sqlite3_libversion(),
           rowid_keys ? "rowid keys (INTEGER PRIMARY KEY)" : "separate UNIQUE key columns (as the Python script)");
    for (int m = 0; m < 2; m++) {
        printf("%s\"%s\": {", m ? ",\n           " : "", modes[m]);
        print_list("seconds", seconds[m], rounds);
        printf(", ");
        print_list("processor_seconds", processor_seconds[m], rounds);
        printf(", \"objects\": %lld}", (long long)stored_objects[m]);
    }
    printf("}}\n");
    fflush(stdout);

    fprintf(stderr, "SQLite %s from C, %s; WAL, foreign keys on, indexes on album.artist and song.album\n", sqlite3_libversion(),
            rowid_keys ? "VARIANT: keys are the rowid (INTEGER PRIMARY KEY), no separate UNIQUE columns"
                       : "keys in separate UNIQUE columns, as sqlite_bulk_commit.py");
    fprintf(stderr, "%lld rows (%lld artists, %lld albums, %lld songs), %lld artists (%lld rows) per transaction, %d round%s\n",
            (long long)expected_objects, (long long)artist_count, (long long)album_count, (long long)song_count,
            (long long)artists_per_batch, (long long)(artists_per_batch * OBJECTS_PER_ARTIST), rounds, rounds == 1 ? "" : "s");
    for (int m = 0; m < 2; m++) {
        double wall = median(seconds[m], rounds), processor = median(processor_seconds[m], rounds);
        fprintf(stderr, "  synchronous=%-4s median %.3f s wall (%.3f µs/row), %.3f s processor (%.3f µs/row)\n", settings[m], wall,
                wall / expected_objects * 1e6, processor, processor / expected_objects * 1e6);
    }
    fprintf(stderr, "contents after every run (same as the rows of the Swift side's change sets, object number = key):\n");
    for (int t = 0; t < 3; t++) {
        fprintf(stderr, "  %-6s", table_names[t]);
        for (int c = 0; c < check_columns[t]; c++)
            fprintf(stderr, "%s %s %lld", c ? "," : "", column_names[t][c], (long long)stored[t].values[c]);
        fprintf(stderr, "\n");
    }
    fprintf(stderr, "  total rows %lld (expected %lld); foreign_key_check clean\n", (long long)stored_objects[1], (long long)expected_objects);
    return 0;
}
