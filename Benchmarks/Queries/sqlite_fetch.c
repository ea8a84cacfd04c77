// SQLite's side of the `query-fetch` benchmark in plain C, with no Python in the loop: what
// sqlite_compare.py (next to this file, run by QueryFetch.swift through
// SQLiteComparison.swift) does, through the C API. For 100,000 and then 1,000,000 items it
// builds an in-memory database (`:memory:`) holding the rows of QueryData.swift, generated
// the same way (SplitMix64, seed 0x5EED0FDA7A, three draws per row), loaded in one
// transaction; then it times QueryFetch's 13 queries (the same SQL) on the bare table
// ("no index"), then after CREATE INDEX on itemID (unique), category, price and tag and
// ANALYZE ("indexed"). Loading and indexing are timed apart.
//
// Each query is prepared once per configuration (as Python's statement cache does) and
// reset before each execution. A fetch steps through every result row and reads every
// column through sqlite3_column_* into an array of rows, as an application would (the
// texts are copied into a buffer the array owns; the array is reused from one execution
// to the next); a count reads its one value. A run is one execution; an execution faster
// than 2 ms (timed once, untimed for the figures: the warm-up, whose answer is the one
// reported) repeats within a run, up to 1,000 times, the run being their mean; 7 runs, the
// median reported. The answers are those the Swift benchmark checks SQLite's against: the
// row count (or the counted value), the sum of the fetched itemIDs, and the itemIDs of the
// first 50 rows of a sorted query.
//
//   cc -O2 Benchmarks/Queries/sqlite_fetch.c -lsqlite3 -o /tmp/sqlite-fetch
//   /tmp/sqlite-fetch [--quick]
//
// --quick: 10,000 items and 3 runs, as `strata-benchmarks --quick`. It prints JSON shaped
// like the Python script's on standard output, and a table of the medians and answers on
// standard error.
//
// Not part of the Swift package (excluded from the strata-benchmarks target).
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const uint64_t seed = 0x5EED0FDA7AULL;
static const double target_seconds = 0.002;

typedef struct {
    const char *name, *sql;
    int is_count, ordered;
    /// Whether Strata answers it from an index: the SQLite configuration it is compared with.
    int strata_uses_index;
} Query;

/// QueryFetch.cases(), with the names the Swift benchmark gives them.
static const Query queries[] = {
    {"fetch tag == \"t123\" [scan]", "SELECT * FROM item WHERE tag = 't123'", 0, 0, 0},
    {"fetch price > 900.5 [scan]", "SELECT * FROM item WHERE price > 900.5", 0, 0, 0},
    {"count tag == \"t123\"", "SELECT count(*) FROM item WHERE tag = 't123'", 1, 0, 0},
    {"count price > 900.5", "SELECT count(*) FROM item WHERE price > 900.5", 1, 0, 0},
    {"fetch category == 17 [index]", "SELECT * FROM item WHERE category = 17", 0, 0, 1},
    {"fetch category BETWEEN {10, 12} [index]", "SELECT * FROM item WHERE category BETWEEN 10 AND 12", 0, 0, 1},
    {"fetch itemID >= 5000 AND itemID < 6000 [unique index]", "SELECT * FROM item WHERE itemID >= 5000 AND itemID < 6000", 0, 0, 1},
    {"fetch itemID BETWEEN {5000, 5999} [unique index]", "SELECT * FROM item WHERE itemID BETWEEN 5000 AND 5999", 0, 0, 1},
    {"fetch sorted by itemID desc, limit 50 [index walk]", "SELECT * FROM item ORDER BY itemID DESC LIMIT 50", 0, 1, 1},
    {"fetch sorted by price, limit 50 [scan + sort]", "SELECT * FROM item ORDER BY price, id LIMIT 50", 0, 1, 0},
    {"fetch category == 17 sorted by price, limit 50 [index]", "SELECT * FROM item WHERE category = 17 ORDER BY price, id LIMIT 50", 0, 1, 1},
    {"count all", "SELECT count(*) FROM item", 1, 0, 0},
    {"count category == 17", "SELECT count(*) FROM item WHERE category = 17", 1, 0, 1},
};
enum { QUERIES = sizeof queries / sizeof *queries, MAX_RUNS = 16, FIRST = 50 };

static const char *indexes[] = {
    "CREATE UNIQUE INDEX item_itemID ON item(itemID)",
    "CREATE INDEX item_category ON item(category)",
    "CREATE INDEX item_price ON item(price)",
    "CREATE INDEX item_tag ON item(tag)",
};

static void fail(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fputs("sqlite_fetch: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void exec(sqlite3 *db, const char *sql) {
    char *message = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) fail("%s: %s", sql, message);
}

/// SplitMix64, as SplitMix64 in Sources/Strata/Support.
static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/// Items 0..<count, as QueryData.values: (id, itemID, name, price, category, tag).
static double load(sqlite3 *db, int count) {
    exec(db, "CREATE TABLE item (id INTEGER PRIMARY KEY, itemID INTEGER NOT NULL, name TEXT NOT NULL, "
             "price REAL NOT NULL, category INTEGER NOT NULL, tag TEXT NOT NULL)");
    sqlite3_stmt *insert;
    if (sqlite3_prepare_v2(db, "INSERT INTO item VALUES (?, ?, ?, ?, ?, ?)", -1, &insert, NULL) != SQLITE_OK)
        fail("prepare: %s", sqlite3_errmsg(db));
    uint64_t state = seed;
    char name[32], tag[32];
    double start = now();
    exec(db, "BEGIN");
    for (int k = 0; k < count; k++) {
        uint64_t a = splitmix(&state), b = splitmix(&state), c = splitmix(&state);
        snprintf(name, sizeof name, "item %d", k);
        snprintf(tag, sizeof tag, "t%llu", (unsigned long long)(c % 1000));
        sqlite3_bind_int64(insert, 1, k + 1);
        sqlite3_bind_int64(insert, 2, k);
        sqlite3_bind_text(insert, 3, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(insert, 4, (double)(a % 100000) / 100);
        sqlite3_bind_int64(insert, 5, (int64_t)(b % 1000));
        sqlite3_bind_text(insert, 6, tag, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(insert) != SQLITE_DONE) fail("insert: %s", sqlite3_errmsg(db));
        sqlite3_reset(insert);
    }
    exec(db, "COMMIT");
    double seconds = now() - start;
    sqlite3_finalize(insert);
    return seconds;
}

/// One result row, every column read; `name` and `tag` are offsets into the result's text.
typedef struct {
    int64_t id, item_id, category;
    double price;
    size_t name, tag;
} Row;

/// A fetch's result, reused from one execution to the next.
typedef struct {
    Row *rows;
    size_t count, capacity;
    char *text;
    size_t text_length, text_capacity;
} Result;

static size_t copy_text(Result *result, sqlite3_stmt *statement, int column) {
    const unsigned char *text = sqlite3_column_text(statement, column);
    size_t length = (size_t)sqlite3_column_bytes(statement, column) + 1;
    if (result->text_length + length > result->text_capacity) {
        result->text_capacity = (result->text_length + length) * 2;
        if (!(result->text = realloc(result->text, result->text_capacity))) fail("out of memory");
    }
    size_t offset = result->text_length;
    memcpy(result->text + offset, text ? (const char *)text : "", length);
    result->text_length += length;
    return offset;
}

/// Runs the query once: the value counted, or the rows fetched into `result`.
static int64_t run_query(sqlite3 *db, sqlite3_stmt *statement, int is_count, Result *result) {
    sqlite3_reset(statement);
    if (is_count) {
        if (sqlite3_step(statement) != SQLITE_ROW) fail("%s: %s", sqlite3_sql(statement), sqlite3_errmsg(db));
        return sqlite3_column_int64(statement, 0);
    }
    result->count = 0;
    result->text_length = 0;
    int rc;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
        if (result->count == result->capacity) {
            result->capacity = result->capacity ? result->capacity * 2 : 1024;
            if (!(result->rows = realloc(result->rows, result->capacity * sizeof *result->rows))) fail("out of memory");
        }
        Row *row = &result->rows[result->count++];
        row->id = sqlite3_column_int64(statement, 0);
        row->item_id = sqlite3_column_int64(statement, 1);
        row->name = copy_text(result, statement, 2);
        row->price = sqlite3_column_double(statement, 3);
        row->category = sqlite3_column_int64(statement, 4);
        row->tag = copy_text(result, statement, 5);
    }
    if (rc != SQLITE_DONE) fail("%s: %s", sqlite3_sql(statement), sqlite3_errmsg(db));
    return (int64_t)result->count;
}

typedef struct {
    double runs_ms[MAX_RUNS], median_ms;
    int repetitions, first_count;
    int64_t count, checksum, first[FIRST];
} Timing;

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *values, int count) {
    double sorted[MAX_RUNS];
    memcpy(sorted, values, count * sizeof *values);
    qsort(sorted, count, sizeof *sorted, compare_doubles);
    return count % 2 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2;
}

/// As sqlite_compare.py's time_query: one untimed execution (the answer, and how many
/// executions make a run), then `runs` runs.
static Timing time_query(sqlite3 *db, const Query *query, int runs) {
    static Result result;
    Timing timing = {0};
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(db, query->sql, -1, &statement, NULL) != SQLITE_OK) fail("%s: %s", query->sql, sqlite3_errmsg(db));
    double start = now();
    int64_t value = run_query(db, statement, query->is_count, &result);
    double single = now() - start;
    timing.count = value;
    if (!query->is_count) {
        for (size_t i = 0; i < result.count; i++) timing.checksum += result.rows[i].item_id;
        if (query->ordered)
            for (size_t i = 0; i < result.count && i < FIRST; i++) timing.first[timing.first_count++] = result.rows[i].item_id;
    }
    double repetitions = target_seconds / (single > 1e-9 ? single : 1e-9);
    timing.repetitions = repetitions < 1 ? 1 : repetitions > 1000 ? 1000 : (int)repetitions;
    for (int r = 0; r < runs; r++) {
        start = now();
        for (int i = 0; i < timing.repetitions; i++) run_query(db, statement, query->is_count, &result);
        timing.runs_ms[r] = (now() - start) / timing.repetitions * 1e3;
    }
    timing.median_ms = median(timing.runs_ms, runs);
    sqlite3_finalize(statement);
    return timing;
}

static void print_json_string(const char *text) {
    putchar('"');
    for (; *text; text++) {
        if (*text == '"' || *text == '\\') putchar('\\');
        putchar(*text);
    }
    putchar('"');
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 2 || (argc == 2 && !quick)) fail("usage: sqlite_fetch [--quick]");
    // As QueryFetch.run: sizes and runs.
    int sizes[2] = {100000, 1000000}, size_count = 2, runs = 7;
    if (quick) sizes[0] = 10000, size_count = 1, runs = 3;
    static const char *configs[2] = {"no index", "indexed"};
    static Timing timings[2][QUERIES];

    printf("{\"sqlite_version\": \"%s\", \"client\": \"C\", \"database\": \"in-memory\", \"sizes\": [", sqlite3_libversion());
    fprintf(stderr, "SQLite %s from C, in-memory; %d runs, medians in ms; the comparable configuration (Strata's) marked *\n",
            sqlite3_libversion(), runs);
    for (int s = 0; s < size_count; s++) {
        sqlite3 *db;
        if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
            fail("cannot open an in-memory database");
        double load_seconds = load(db, sizes[s]);
        for (int q = 0; q < QUERIES; q++) timings[0][q] = time_query(db, &queries[q], runs);
        double start = now();
        for (size_t i = 0; i < sizeof indexes / sizeof *indexes; i++) exec(db, indexes[i]);
        exec(db, "ANALYZE");
        double index_seconds = now() - start;
        for (int q = 0; q < QUERIES; q++) timings[1][q] = time_query(db, &queries[q], runs);
        if (sqlite3_close(db) != SQLITE_OK) fail("close: %s", sqlite3_errmsg(db));

        printf("%s\n {\"rows\": %d, \"load_seconds\": %.6f, \"index_seconds\": %.6f, \"configs\": {", s ? "," : "", sizes[s],
               load_seconds, index_seconds);
        for (int c = 0; c < 2; c++) {
            printf("%s\n  \"%s\": {", c ? "," : "", configs[c]);
            for (int q = 0; q < QUERIES; q++) {
                const Timing *t = &timings[c][q];
                printf("%s\n   ", q ? "," : "");
                print_json_string(queries[q].name);
                printf(": {\"runs_ms\": [");
                for (int r = 0; r < runs; r++) printf("%s%.6f", r ? ", " : "", t->runs_ms[r]);
                printf("], \"repetitions\": %d, \"count\": %lld, \"checksum\": %lld, \"first\": [", t->repetitions,
                       (long long)t->count, (long long)t->checksum);
                for (int i = 0; i < t->first_count; i++) printf("%s%lld", i ? ", " : "", (long long)t->first[i]);
                printf("]}");
            }
            printf("}");
        }
        printf("}}");
        fflush(stdout);

        fprintf(stderr, "[%d rows] load %.3f s (one transaction), CREATE INDEX x4 + ANALYZE %.3f s\n", sizes[s], load_seconds, index_seconds);
        fprintf(stderr, "  %-56s %10s %10s %9s %14s  %s\n", "query", "no index", "indexed", "count", "sum(itemID)", "first itemIDs");
        for (int q = 0; q < QUERIES; q++) {
            const Timing *plain = &timings[0][q], *indexed = &timings[1][q];
            if (plain->count != indexed->count || plain->checksum != indexed->checksum || plain->first_count != indexed->first_count ||
                memcmp(plain->first, indexed->first, sizeof plain->first) != 0)
                fail("%s: different answers without and with the indexes", queries[q].name);
            int like = queries[q].strata_uses_index;
            fprintf(stderr, "  %-56s %9.4f%s %9.4f%s %9lld %14lld ", queries[q].name, plain->median_ms, like ? " " : "*",
                    indexed->median_ms, like ? "*" : " ", (long long)plain->count, (long long)plain->checksum);
            if (plain->first_count) {
                fprintf(stderr, " %lld, %lld, %lld ... %lld (%d)", (long long)plain->first[0], (long long)plain->first[1],
                        (long long)plain->first[2], (long long)plain->first[plain->first_count - 1], plain->first_count);
            }
            fprintf(stderr, "\n");
        }
    }
    printf("]}\n");
    return 0;
}
