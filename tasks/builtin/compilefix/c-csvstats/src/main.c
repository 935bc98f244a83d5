/* csvstats: prints count, min, max and mean of every numeric column of a
 * CSV file whose first line is a header. */
#include <stdio.h>

#include "csv.h"
#include "stats.h"

int main(int argc, char **argv)
{
    FILE *in = stdin;
    if (argc > 1) {
        in = fopen(argv[1], "r");
        if (in == NULL) {
            perror(argv[1]);
            return 1;
        }
    }

    char line[CSV_MAX_LINE];
    CsvRecord header, rec;
    ColumnStats cols[CSV_MAX_FIELDS];

    if (fgets(line, sizeof line, in) == NULL || csv_split(line, &header) != 0) {
        fprintf(stderr, "csvstats: missing or malformed header\n");
        return 1;
    }
    for (size_t i = 0; i < header.count; i++) {
        stats_init(&cols[i]);
    }

    int lineno = 1;
    while (fgets(line, sizeof line, in) != NULL) {
        lineno++;
        if (csv_split(line, &rec) != 0) {
            fprintf(stderr, "csvstats: line %d: malformed record\n", lineno);
            continue;
        }
        for (size_t i = 0; i < header.count; i++) {
            double v;
            if (i < rec.count && csv_number(rec.fields[i], &v) == 0) {
                stats_add(&cols[i], v);
            } else {
                stats_skip(&cols[i]);
            }
        }
    }

    printf("%-16s %8s %12s %12s %12s\n", "column", "count", "min", "max", "mean");
    for (size_t i = 0; i < header.count; i++) {
        if (cols[i].count == 0) {
            continue;
        }
        printf("%-16s %8zu %12.3f %12.3f %12.3f\n", header.fields[i], cols[i].count,
               cols[i].min, cols[i].max, stats_mean(&cols[i]));
    }
    if (in != stdin) {
        fclose(in);
    }
    return 0;
}
