#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ini.h"

/* Strips leading and trailing white space in place. */
static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) {
        s++;
    }
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) {
        end--;
    }
    *end = '\0';
    return s;
}

static void copy(char *dst, const char *src, size_t size)
{
    strncpy(dst, src, size - 1);
    dst[size - 1] = '\0';
}

int ini_parse(Ini *ini, FILE *in)
{
    char buf[512];
    char section[INI_MAX_NAME] = "";
    int lineno = 0;

    ini->count = 0;
    while (fgets(buf, sizeof buf, in) != NULL) {
        lineno++;
        char *line = trim(buf);
        if (*line == '\0' || *line == ';' || *line == '#') {
            continue;
        }
        if (*line == '[') {
            char *close = strchr(line, ']');
            if (close == NULL) {
                return lineno;
            }
            *close = '\0';
            copy(section, trim(line + 1), sizeof section);
            continue;
        }
        char *eq = strchr(line, '=');
        if (eq == NULL || ini->count == INI_MAX_ENTRIES) {
            return lineno;
        }
        *eq = '\0'
        IniEntry *e = &ini->entries[ini->count++];
        copy(e->section, section, sizeof e->section);
        copy(e->key, trim(line), sizeof e->key);
        copy(e->value, trim(eq + 1), sizeof e->value);
    }
    return 0;
}

const char *ini_get(const Ini *ini, const char *section, const char *key, const char *fallback)
{
    for (int i = ini->count - 1; i >= 0; i--) {
        const IniEntry *e = &ini->entries[i];
        if (strcmp(e->section, section) == 0 && strcmp(e->key, key) == 0) {
            return e->value;
        }
    }
    return fallback;
}

long ini_get_long(const Ini *ini, const char *section, const char *key, long fallback)
{
    const char *v = ini_get(ini, section, key, NULL);
    if (v == NULL) {
        return fallback;
    }
    char *end;
    long n = strtol(v, &end, 10);
    return (*v != '\0' && *end == '\0') ? n : fallback;
}
