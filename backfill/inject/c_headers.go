package inject

import "strings"

// cHeaders lists, for standard C headers, names that only they declare:
// dropping the header leaves a file that uses one of them broken.
var cHeaders = map[string][]string{
	"stdio.h": strings.Fields(`printf fprintf sprintf snprintf vsnprintf vfprintf fopen fclose fread fwrite fputs
		puts fgets fputc putc getc fgetc sscanf fscanf FILE stderr stdout stdin EOF perror fflush putchar getchar
		fseek ftell rewind`),
	"stdlib.h": strings.Fields(`malloc calloc realloc free exit atoi atol atof strtol strtoul strtoll strtoull
		strtod abort qsort bsearch getenv EXIT_SUCCESS EXIT_FAILURE rand srand`),
	"string.h": strings.Fields(`strlen strcmp strncmp memcpy memset memmove memcmp strcpy strncpy strchr
		strrchr strstr strcat strncat strerror strdup strtok strspn strcspn`),
	"math.h": strings.Fields(`fabs sqrt pow floor ceil isnan isinf sin cos tan log log10 exp fmod HUGE_VAL
		NAN INFINITY round trunc`),
	"ctype.h":  strings.Fields(`isdigit isalpha isspace isalnum isupper islower tolower toupper isxdigit isprint iscntrl ispunct`),
	"limits.h": strings.Fields(`INT_MAX INT_MIN UINT_MAX LONG_MAX LONG_MIN ULONG_MAX CHAR_BIT SHRT_MAX UCHAR_MAX LLONG_MAX`),
	"float.h":  strings.Fields(`DBL_EPSILON DBL_MAX DBL_MIN DBL_DIG FLT_EPSILON FLT_MAX FLT_MIN LDBL_MAX`),
	"assert.h": {"assert"},
	"errno.h":  strings.Fields(`errno EINVAL ENOMEM ERANGE EAGAIN EINTR ENOENT`),
	"stdint.h": strings.Fields(`uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t SIZE_MAX
		UINT8_MAX UINT16_MAX UINT32_MAX UINT64_MAX INT32_MAX INT64_MAX uintptr_t intptr_t`),
	"stdbool.h": {"bool", "true", "false"},
	"stdarg.h":  strings.Fields(`va_list va_start va_end va_arg va_copy`),
	"time.h":    strings.Fields(`time_t clock_t time clock difftime mktime localtime gmtime strftime CLOCKS_PER_SEC`),
	"locale.h":  strings.Fields(`setlocale localeconv LC_ALL LC_NUMERIC`),
}

// stdHeaderName reports whether a standard header above declares s.
func stdHeaderName(s string) bool {
	for _, ns := range cHeaders {
		for _, n := range ns {
			if n == s {
				return true
			}
		}
	}
	return false
}
