// A model of the `durability` scenario's closed loop in plain C, to tell what the machine
// allows from what Strata's code costs: writers that each do WORK microseconds of
// processor work, append 200 bytes and wait until a group commit has made them durable
// (`pwrite` into zero-filled space, then `fdatasync`), then do WORK/2 more, over and over.
// The appender that finds its group complete (GATHER pending) writes and syncs it; the
// others yield the processor while they wait, as Strata's appenders that may block do. Up to
// IN_FLIGHT groups may sync at once (overlapping syncs). Prints one writer's saves/s, then
// four writers', alternating, ROUNDS times, and the ratio of each pair.
//
//   cc -O2 -pthread Benchmarks/Journal/group_commit_model.c -o /tmp/group-commit-model
//   /tmp/group-commit-model [WORK_US=20] [ROUNDS=3] [GATHER=4] [IN_FLIGHT=1] [DIRECTORY=/tmp]
//
// Not part of the Swift package (excluded from the benchmarks target); docs/PERFORMANCE.md
// ("durability") has what it measured.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fd, savesPerWriter, inFlightLimit, gather;
static double workMicroseconds;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long appended, taken, inFlight, syncs, fileOffset, looksWithoutGroup;
static atomic_long durableThrough;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void work(double microseconds) {
    double end = now() + microseconds / 1e6;
    while (now() < end) {}
}

static void *writer(void *unused) {
    (void)unused;
    static char bytes[200 * 16];
    for (int i = 0; i < savesPerWriter; i++) {
        work(workMicroseconds);
        pthread_mutex_lock(&lock);
        long mine = ++appended;
        pthread_mutex_unlock(&lock);
        while (atomic_load(&durableThrough) < mine) {
            pthread_mutex_lock(&lock);
            // Lead when the group is complete (or has waited long enough to give up on it).
            if (taken < mine && inFlight < inFlightLimit && (appended - taken >= gather || ++looksWithoutGroup > 200)) {
                looksWithoutGroup = 0;
                long through = appended, count = appended - taken, offset = fileOffset;
                taken = through;
                inFlight++;
                syncs++;
                fileOffset += count * 200;
                size_t length = count * 200 > (long)sizeof bytes ? sizeof bytes : (size_t)count * 200;
                if (pwrite(fd, bytes, length, offset) < 0) abort();
                pthread_mutex_unlock(&lock);
                if (fdatasync(fd) != 0) abort();
                pthread_mutex_lock(&lock);
                inFlight--;
                if (through > atomic_load(&durableThrough)) atomic_store(&durableThrough, through);
                pthread_mutex_unlock(&lock);
                continue;
            }
            pthread_mutex_unlock(&lock);
            sched_yield();
        }
        work(workMicroseconds / 2);
    }
    return NULL;
}

static double run(int writers, int saves, const char *path) {
    fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0) { perror(path); exit(1); }
    static char zeros[1 << 16];
    for (int i = 0; i < 256; i++) if (write(fd, zeros, sizeof zeros) != sizeof zeros) abort();
    if (fsync(fd) != 0) abort();
    appended = taken = inFlight = syncs = fileOffset = looksWithoutGroup = 0;
    atomic_store(&durableThrough, 0);
    savesPerWriter = saves / writers;
    pthread_t threads[16];
    double start = now();
    for (int i = 0; i < writers; i++) pthread_create(&threads[i], NULL, writer, NULL);
    for (int i = 0; i < writers; i++) pthread_join(threads[i], NULL);
    double rate = savesPerWriter * writers / (now() - start);
    close(fd);
    unlink(path);
    return rate;
}

int main(int argc, char **argv) {
    workMicroseconds = argc > 1 ? atof(argv[1]) : 20;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    gather = argc > 3 ? atoi(argv[3]) : 4;
    inFlightLimit = argc > 4 ? atoi(argv[4]) : 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/group-commit-model-%d", argc > 5 ? argv[5] : "/tmp", (int)getpid());
    for (int round = 0; round < rounds; round++) {
        int keptGather = gather;
        gather = 1;
        double one = run(1, 4000, path);
        gather = keptGather;
        double four = run(4, 8000, path);
        printf("work %.0f+%.0f us: 1 writer %.0f saves/s, 4 writers %.0f saves/s (%.3f syncs/save): %.2fx\n",
               workMicroseconds, workMicroseconds / 2, one, four, (double)syncs / 8000, four / one);
    }
    return 0;
}
