#ifndef INI_H
#define INI_H

#include <stdio.h>

#define INI_MAX_ENTRIES 128
#define INI_MAX_NAME 64
#define INI_MAX_VALUE 256

typedef struct {
    char section[INI_MAX_NAME];
    char key[INI_MAX_NAME];
    char value[INI_MAX_VALUE];
} IniEntry;

typedef struct {
    IniEntry entries[INI_MAX_ENTRIES];
    int count;
} Ini;

/* Reads an INI file: [section] headers, key = value lines, ';' and '#'
 * comments. Returns 0, or the number of the first bad line. */
int ini_parse(Ini *ini, FILE *in);

/* Returns the value of key in section, or fallback when it is absent. */
const char *ini_get(const Ini *ini, const char *section, const char *key, const char *fallback);

/* Returns the value of key in section as an integer, or fallback. */
long ini_get_long(const Ini *ini, const char *section, const char *key, long fallback);

#endif
