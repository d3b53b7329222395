/*
 * Minimal stand-in for librdkafka's internal src/rd.h, just enough to build
 * the upstream examples/rdkafka_performance.c (shipped by Debian's
 * librdkafka-dev) against the installed public header. benches/run.sh copies
 * the example next to this directory and compiles it; the example itself is
 * not part of this repository.
 */
#pragma once

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* same (empty) definition the example repeats: strndup() */
#endif

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

typedef int64_t rd_ts_t;

/* Monotonic clock in microseconds. */
static inline rd_ts_t rd_clock(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (rd_ts_t)ts.tv_sec * 1000000 + (rd_ts_t)(ts.tv_nsec / 1000);
}

/* Wall clock in microseconds. */
static inline rd_ts_t rd_uclock(void) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        return (rd_ts_t)tv.tv_sec * 1000000 + (rd_ts_t)tv.tv_usec;
}

#define rd_snprintf snprintf

#define RD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RD_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RD_UNUSED    __attribute__((unused))

static inline void rd_usleep(int us, void *terminate RD_UNUSED) {
        usleep((useconds_t)us);
}
#define rd_sleep(s) sleep(s)
