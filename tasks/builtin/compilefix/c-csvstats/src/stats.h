#ifndef STATS_H
#define STATS_H

#include <stddef.h>

/* Running summary of one numeric column. */
typedef struct {
    size_t count;
    size_t skipped;
    double min;
    double max;
    double sum;
} ColumnStats;

void stats_init(ColumnStats *s);
void stats_add(ColumnStats *s, double v);
void stats_skip(ColumnStats *s);
double stats_mean(const ColumnStats *s);

#endif
