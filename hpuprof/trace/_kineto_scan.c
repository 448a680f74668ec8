/* Compiled scanner for the body of a Kineto `traceEvents` array (the text between its `[`
 * and `]`, or a chunk of it cut at an event boundary): one pass over the bytes, columns out,
 * no Python object per event.
 *
 * It accepts only what it is sure the msgspec path reads the same way. Anything else (a
 * syntax error, a wrong cut, an escaped key, a value of an unusual type, a duplicate key,
 * invalid UTF-8, a number it cannot convert exactly like msgspec) makes `scan` return None,
 * and the caller decodes that chunk with the msgspec path, which gives the columns or the
 * exact error it always gave.
 *
 * scan(buffer, arg_keys, arg_kinds, spans=0) -> None | tuple
 *   arg_keys: tuple of bytes (the args keys the model reads), arg_kinds: bytes, one kind per
 *   key: 'i' int64 id (NO_ID when absent), 'r' raw JSON bytes of an array, 'v' raw JSON
 *   bytes of any value (null too), 't' tagged text, 'f' flag,
 *   'p' a key prefix (at most one): its column marks the rows whose args hold a key with
 *   this prefix that is none of the other keys (hpuprof's keys read later): n uint64, bit
 *   key_bucket(key) set for each such key a row holds (0: none), so that the keys no row
 *   holds are known without a search (a bucket is 64 keys' worth of hash: a superset).
 *   The tuple: (n, ph, ts, dur, name, cat, pid, tid, flow_id, bp, args, *per-key columns)
 *   where ph is n uint8, ts/dur n float64 (NaN when absent or null), id and flag columns are
 *   n int64 / int8, args is a pair (offsets: n+1 int64, data: bytes) or, with
 *   `spans`, (starts: n int64, lengths: n int64): where each row's args object lies in
 *   `buffer` (0, 0 for a row without), nothing copied; every other column
 *   is dictionary-encoded as it is scanned: None when no row has a value, else a triple
 *   (offsets: k+1 int64, data: bytes) of its k distinct values in order of first appearance
 *   (b"" among them when some row has none) and indices: n int32 into them.
 *   Tagged text values start with a tag byte: 's' a string (its UTF-8 follows), 'i' an
 *   integer (its decimal digits follow), 'n' absent or null.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEYS 32
#define MAX_DEPTH 512
#define KEY_LENS 64
#define NO_ID (-1)

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static int buf_grow(Buf *b, size_t extra) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_reserve(Buf *b, size_t extra) {
    return b->len + extra <= b->cap ? 0 : buf_grow(b, extra);
}

/* Inlined: a constant-size put (an 8-byte number, a tag byte) is a single store. */
static inline int buf_put(Buf *b, const void *data, size_t n) {
    if (buf_reserve(b, n)) return -1;
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    return 0;
}

/* A variable-length column: offsets (int64) + data. The offsets start only with the first
 * row that has data (`started`): a column empty in every row (most args keys of most
 * traces) writes nothing per row. */
typedef struct {
    Buf off, data;
    int started;
} VarCol;

/* Close row `row` (0-based) of the column. */
static int var_start(VarCol *c, size_t row) {
    int64_t end = 0;
    if (buf_reserve(&c->off, (row + 2) * sizeof end)) return -1;
    memset(c->off.p, 0, (row + 1) * sizeof end); /* the rows before: all empty */
    c->off.len = (row + 1) * sizeof end;
    c->started = 1;
    return 0;
}

static inline int var_end(VarCol *c, size_t row) {
    int64_t end = (int64_t)c->data.len;
    if (!c->started) {
        if (!end) return 0;
        if (var_start(c, row)) return -1;
    }
    return buf_put(&c->off, &end, sizeof end);
}

/* A dictionary-encoded column. A row's value is appended to `data` after its distinct
 * values (from `base`); at the row's end it is looked up among them (open addressing over
 * `slots`, which hold distinct index + 1): a value seen before is dropped from `data` again,
 * a new one stays and becomes the next distinct value. Until the first row with a value
 * (`started`) nothing is written per row. */
typedef struct {
    Buf data, off, idx; /* distinct values; their k+1 int64 offsets; n int32 indices */
    uint32_t *slots;
    size_t nslots, count, base;
    size_t last; /* the previous row's distinct index + 1 (0: none): rows repeat it often */
    int started;
} DictCol;

static inline uint64_t hash_bytes(const unsigned char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static int dict_rehash(DictCol *d) {
    size_t nslots = d->nslots ? d->nslots * 2 : 64;
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots) return -1;
    const int64_t *off = (const int64_t *)d->off.p;
    for (size_t k = 0; k < d->count; k++) {
        size_t j = hash_bytes((const unsigned char *)d->data.p + off[k], (size_t)(off[k + 1] - off[k]));
        for (j &= nslots - 1; slots[j]; j = (j + 1) & (nslots - 1)) {
        }
        slots[j] = (uint32_t)(k + 1);
    }
    free(d->slots);
    d->slots = slots;
    d->nslots = nslots;
    return 0;
}

/* The index of the value data[base:len] (the row's), added when new. -1 on no memory. */
static int dict_intern(DictCol *d, int32_t *out) {
    if (!d->off.len) { /* the first offset */
        int64_t zero = 0;
        if (buf_reserve(&d->off, 64 * sizeof zero)) return -1;
        memcpy(d->off.p, &zero, sizeof zero);
        d->off.len = sizeof zero;
    }
    const unsigned char *value = (const unsigned char *)d->data.p + d->base;
    size_t len = d->data.len - d->base;
    const int64_t *off = (const int64_t *)d->off.p;
    if (d->last) { /* the previous row's value again (a lane's pid, tid, category...): no hash */
        size_t k = d->last - 1;
        if ((size_t)(off[k + 1] - off[k]) == len && !memcmp(d->data.p + off[k], value, len)) {
            d->data.len = d->base;
            *out = (int32_t)k;
            return 0;
        }
    }
    if (2 * (d->count + 1) > d->nslots && dict_rehash(d)) return -1;
    size_t mask = d->nslots - 1, j = hash_bytes(value, len) & mask;
    for (; d->slots[j]; j = (j + 1) & mask) {
        size_t k = d->slots[j] - 1;
        if ((size_t)(off[k + 1] - off[k]) == len && !memcmp(d->data.p + off[k], value, len)) {
            d->data.len = d->base; /* seen before: dropped */
            d->last = k + 1;
            *out = (int32_t)k;
            return 0;
        }
    }
    if (d->count >= INT32_MAX) return -1;
    int64_t end = (int64_t)d->data.len;
    if (buf_put(&d->off, &end, sizeof end)) return -1;
    d->slots[j] = (uint32_t)(d->count + 1);
    d->base = d->data.len;
    d->last = d->count + 1;
    *out = (int32_t)d->count++;
    return 0;
}

/* Close row `row` (0-based) of the column. */
static inline int dict_end(DictCol *d, size_t row) {
    int32_t k;
    if (!d->started) {
        if (d->data.len == d->base) return 0; /* no value yet in any row */
        if (buf_reserve(&d->idx, (row + 1) * sizeof k)) return -1;
        if (row) { /* the rows before had none: b"" is the first distinct value */
            size_t len = d->data.len;
            d->data.len = d->base;
            if (dict_intern(d, &k)) return -1;
            d->data.len = len;
            memset(d->idx.p, 0, row * sizeof k); /* (k is 0) */
        }
        d->idx.len = row * sizeof k;
        d->started = 1;
    }
    if (dict_intern(d, &k)) return -1;
    return buf_put(&d->idx, &k, sizeof k);
}

static void dict_clear(DictCol *d, int free_memory) {
    Buf *bufs[] = {&d->data, &d->off, &d->idx};
    for (size_t k = 0; k < 3; k++) {
        bufs[k]->len = 0;
        if (free_memory) {
            free(bufs[k]->p);
            bufs[k]->p = NULL;
            bufs[k]->cap = 0;
        }
    }
    if (free_memory) {
        free(d->slots);
        d->slots = NULL;
        d->nslots = 0;
    } else if (d->slots) {
        memset(d->slots, 0, d->nslots * sizeof *d->slots);
    }
    d->count = d->base = d->last = 0;
    d->started = 0;
}

typedef struct {
    const unsigned char *s;
    size_t n, i;
} Cur;

static inline void skip_ws(Cur *c) {
    size_t i = c->i, n = c->n;
    const unsigned char *s = c->s;
    if (i < n && s[i] > ' ') return; /* (compact JSON: the one test made for most calls) */
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) i++;
    c->i = i;
}

/* Bytes a string copies as they are: not '"', '\\', a control character or non-ASCII. */
static unsigned char PLAIN[256];

static void init_plain(void) {
    for (int ch = 0x20; ch < 0x80; ch++) PLAIN[ch] = ch != '"' && ch != '\\';
}

/* Length of a valid UTF-8 sequence at s (max n bytes), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned char a = s[0];
    if (a < 0x80) return 1;
    if (a >= 0xC2 && a <= 0xDF) return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
    if (a >= 0xE0 && a <= 0xEF) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        if (a == 0xE0 && s[1] < 0xA0) return 0;
        if (a == 0xED && s[1] >= 0xA0) return 0; /* surrogates */
        return 3;
    }
    if (a >= 0xF0 && a <= 0xF4) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        if (a == 0xF0 && s[1] < 0x90) return 0;
        if (a == 0xF4 && s[1] >= 0x90) return 0;
        return 4;
    }
    return 0;
}

static int hex4(const unsigned char *s, unsigned *out) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char h = s[k];
        v <<= 4;
        if (h >= '0' && h <= '9')
            v |= h - '0';
        else if (h >= 'a' && h <= 'f')
            v |= h - 'a' + 10;
        else if (h >= 'A' && h <= 'F')
            v |= h - 'A' + 10;
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* Parse a string at c->i (on its opening quote). When `out` is given, its unescaped UTF-8 is
 * appended. `escaped` is set when the string held a backslash. 0 ok, -1 reject. */
static int parse_string(Cur *c, Buf *out, int *escaped) {
    const unsigned char *s = c->s;
    size_t i = c->i + 1, n = c->n;
    if (escaped) *escaped = 0;
    for (;;) {
        size_t start = i;
        /* eight bytes at a time while none is '"', '\\', a control byte or non-ASCII */
        while (i + 8 <= n) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
            uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
            uint64_t special = ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b) | x;
            special &= high;
            if (special) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                /* the lowest flagged byte is the first special one: a borrow starts at a
                 * flagged byte and flags only bytes above it (later in the input) */
                i += (size_t)__builtin_ctzll(special) / 8;
                goto special_byte;
#else
                break; /* the byte loop below finds which */
#endif
            }
            i += 8;
        }
        while (i < n && PLAIN[s[i]]) i++;
    special_byte:
        if (out && i > start && buf_put(out, s + start, i - start)) return -1;
        if (i >= n) return -1;
        unsigned char ch = s[i];
        if (ch == '"') {
            c->i = i + 1;
            return 0;
        }
        if (ch < 0x20) return -1;
        if (ch >= 0x80) {
            size_t k = utf8_len(s + i, n - i);
            if (!k) return -1;
            if (out && buf_put(out, s + i, k)) return -1;
            i += k;
            continue;
        }
        /* backslash */
        if (escaped) *escaped = 1;
        if (i + 1 >= n) return -1;
        unsigned char e = s[i + 1];
        char one;
        switch (e) {
            case '"': one = '"'; break;
            case '\\': one = '\\'; break;
            case '/': one = '/'; break;
            case 'b': one = '\b'; break;
            case 'f': one = '\f'; break;
            case 'n': one = '\n'; break;
            case 'r': one = '\r'; break;
            case 't': one = '\t'; break;
            case 'u': one = 0; break;
            default: return -1;
        }
        if (e != 'u') {
            if (out && buf_put(out, &one, 1)) return -1;
            i += 2;
            continue;
        }
        unsigned cp;
        if (i + 6 > n || hex4(s + i + 2, &cp)) return -1;
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (i + 6 > n || s[i] != '\\' || s[i + 1] != 'u' || hex4(s + i + 2, &lo)) return -1;
            if (lo < 0xDC00 || lo > 0xDFFF) return -1;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return -1; /* a lone low surrogate */
        }
        unsigned char u[4];
        size_t k;
        if (cp < 0x80) {
            u[0] = (unsigned char)cp;
            k = 1;
        } else if (cp < 0x800) {
            u[0] = (unsigned char)(0xC0 | (cp >> 6));
            u[1] = (unsigned char)(0x80 | (cp & 0x3F));
            k = 2;
        } else if (cp < 0x10000) {
            u[0] = (unsigned char)(0xE0 | (cp >> 12));
            u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (unsigned char)(0x80 | (cp & 0x3F));
            k = 3;
        } else {
            u[0] = (unsigned char)(0xF0 | (cp >> 18));
            u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[3] = (unsigned char)(0x80 | (cp & 0x3F));
            k = 4;
        }
        if (out && buf_put(out, u, k)) return -1;
    }
}

/* A JSON number at c->i. Sets its span and whether it is an integer. 0 ok, -1 reject. */
typedef struct {
    size_t start, end;
    int integer;   /* no fraction, no exponent */
    int negative;
    size_t digits; /* integer digits (integers only) */
} Num;

static int parse_number(Cur *c, Num *num) {
    const unsigned char *s = c->s;
    size_t i = c->i, n = c->n;
    num->start = i;
    num->integer = 1;
    num->negative = 0;
    if (i < n && s[i] == '-') {
        num->negative = 1;
        i++;
    }
    if (i >= n) return -1;
    size_t d0 = i;
    if (s[i] == '0') {
        i++;
    } else if (s[i] >= '1' && s[i] <= '9') {
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    } else {
        return -1;
    }
    num->digits = i - d0;
    if (i < n && s[i] == '.') {
        num->integer = 0;
        i++;
        size_t f = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == f) return -1;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        num->integer = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t f = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == f) return -1;
    }
    num->end = c->i = i;
    return 0;
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The double nearest to the number (as msgspec decodes it). -1 when not sure. */
static int number_double(const unsigned char *s, const Num *num, double *out) {
    size_t i = num->start, end = num->end;
    int neg = s[i] == '-';
    if (neg) i++;
    uint64_t mant = 0;
    int sig = 0, frac = 0;
    for (; i < end && s[i] >= '0' && s[i] <= '9'; i++) {
        if (sig || s[i] != '0') sig++;
        mant = mant * 10 + (uint64_t)(s[i] - '0');
        if (sig > 19) goto slow;
    }
    if (i < end && s[i] == '.') {
        for (i++; i < end && s[i] >= '0' && s[i] <= '9'; i++) {
            if (sig || s[i] != '0') sig++;
            mant = mant * 10 + (uint64_t)(s[i] - '0');
            frac++;
            if (sig > 19 || frac > 22) goto slow;
        }
    }
    if (i < end || mant > (1ull << 53)) goto slow; /* an exponent, or too many digits */
    {
        /* Clinger's fast path: mant < 2^53 and 10^frac exact, one correctly rounded division */
        double v = (double)mant / POW10[frac];
        *out = neg ? -v : v;
        return 0;
    }
slow: {
    if (num->integer && num->digits > 18) return -1; /* msgspec's int -> float: not ours */
    char tmp[64];
    size_t len = end - num->start;
    if (len >= sizeof tmp) return -1;
    memcpy(tmp, s + num->start, len);
    tmp[len] = 0;
    char *stop;
    double v = strtod(tmp, &stop);
    if ((size_t)(stop - tmp) != len || isinf(v)) return -1;
    *out = v;
    return 0;
}
}

static int skip_value(Cur *c, int depth);

static int expect_literal(Cur *c, const char *word, size_t len) {
    if (c->i + len > c->n || memcmp(c->s + c->i, word, len)) return -1;
    c->i += len;
    return 0;
}

static int skip_container(Cur *c, int depth, unsigned char close) {
    if (depth > MAX_DEPTH) return -1;
    c->i++;
    skip_ws(c);
    if (c->i < c->n && c->s[c->i] == close) {
        c->i++;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            if (c->i >= c->n || c->s[c->i] != '"' || parse_string(c, NULL, NULL)) return -1;
            skip_ws(c);
            if (c->i >= c->n || c->s[c->i] != ':') return -1;
            c->i++;
            skip_ws(c);
        }
        if (skip_value(c, depth + 1)) return -1;
        skip_ws(c);
        if (c->i >= c->n) return -1;
        if (c->s[c->i] == ',') {
            c->i++;
            skip_ws(c);
            continue;
        }
        if (c->s[c->i] == close) {
            c->i++;
            return 0;
        }
        return -1;
    }
}

static int skip_value(Cur *c, int depth) {
    if (c->i >= c->n) return -1;
    Num num;
    switch (c->s[c->i]) {
        case '{': return skip_container(c, depth, '}');
        case '[': return skip_container(c, depth, ']');
        case '"': return parse_string(c, NULL, NULL);
        case 't': return expect_literal(c, "true", 4);
        case 'f': return expect_literal(c, "false", 5);
        case 'n': return expect_literal(c, "null", 4);
        default: return parse_number(c, &num);
    }
}

/* The integer value of an integer number (int64, uint64 past int64 as two's complement). */
static int number_int64(const unsigned char *s, const Num *num, int64_t *out) {
    if (!num->integer || num->digits > 20) return -1;
    size_t i = num->start + (size_t)num->negative;
    uint64_t v = 0;
    for (; i < num->end; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (num->negative) {
        if (v == 0) return -1; /* "-0": leave it to msgspec */
        if (v > (uint64_t)INT64_MAX + 1) return -1;
        *out = (int64_t)(0 - v);
    } else {
        *out = (int64_t)v; /* values past int64 wrap to their two's complement */
    }
    return 0;
}

/* An id written as text, read like Python's int(text), else int(text, 0): plain decimal or
 * 0x hex with an optional '-', and "" (NO_ID). -1 for any other spelling (msgspec path). */
static int string_id(Cur *c, int64_t *out) {
    size_t start = c->i + 1;
    int escaped;
    if (parse_string(c, NULL, &escaped) || escaped) return -1;
    const unsigned char *s = c->s + start;
    size_t n = c->i - 1 - start, i = 0;
    if (n == 0) {
        *out = NO_ID;
        return 0;
    }
    int neg = s[0] == '-';
    i += (size_t)neg;
    int base = 10;
    if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        base = 16;
        i += 2;
    }
    if (i >= n || n - i > 16) return -1;
    uint64_t v = 0;
    for (; i < n; i++) {
        unsigned char h = s[i];
        unsigned d;
        if (h >= '0' && h <= '9')
            d = h - '0';
        else if (base == 16 && h >= 'a' && h <= 'f')
            d = h - 'a' + 10;
        else if (base == 16 && h >= 'A' && h <= 'F')
            d = h - 'A' + 10;
        else
            return -1;
        v = v * (uint64_t)base + d;
    }
    if (neg && v > (uint64_t)INT64_MAX) return -1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* Tagged text of a value: 's' + string, 'i' + digits, 'n' for null. -1 for other types. */
static int tagged_value(Cur *c, Buf *out, int allow_int) {
    unsigned char ch = c->s[c->i];
    if (ch == '"') {
        char tag = 's';
        if (buf_put(out, &tag, 1)) return -1;
        return parse_string(c, out, NULL);
    }
    if (ch == 'n') {
        char tag = 'n';
        if (expect_literal(c, "null", 4)) return -1;
        return buf_put(out, &tag, 1);
    }
    if (!allow_int) return -1;
    Num num;
    int64_t unused;
    if (parse_number(c, &num) || number_int64(c->s, &num, &unused)) return -1; /* in range */
    char tag = 'i';
    if (buf_put(out, &tag, 1)) return -1;
    return buf_put(out, c->s + num.start, num.end - num.start);
}

enum { K_PH, K_NAME, K_CAT, K_PID, K_TID, K_TS, K_DUR, K_ID, K_BP, K_ARGS, K_OTHER };

/* The bit a 'p' column sets for a key (all its bytes): (sum of byte * 31^(n-1-i)) mod 64,
 * fastscan.key_bucket's rule. */
static inline uint64_t key_bucket(const unsigned char *k, size_t n) {
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++) h = h * 31u + k[i];
    return (uint64_t)1 << (h & 63u);
}

static int event_key(const unsigned char *k, size_t n) {
    switch (n) {
        case 2:
            if (!memcmp(k, "ph", 2)) return K_PH;
            if (!memcmp(k, "ts", 2)) return K_TS;
            if (!memcmp(k, "id", 2)) return K_ID;
            if (!memcmp(k, "bp", 2)) return K_BP;
            break;
        case 3:
            if (!memcmp(k, "cat", 3)) return K_CAT;
            if (!memcmp(k, "pid", 3)) return K_PID;
            if (!memcmp(k, "tid", 3)) return K_TID;
            if (!memcmp(k, "dur", 3)) return K_DUR;
            break;
        case 4:
            if (!memcmp(k, "name", 4)) return K_NAME;
            if (!memcmp(k, "args", 4)) return K_ARGS;
            break;
    }
    return K_OTHER;
}

typedef struct {
    Buf ph, ts, dur;
    DictCol name, cat, pid, tid, fid, bp;
    VarCol args;
    int spans;              /* args as spans of the input (starts in args.off, lengths in
                               args.data, int64 each), not copied */
    size_t arg_start, arg_len; /* the span of the event's args object (spans) */
    int nkeys;
    const char *keys[MAX_KEYS];
    Py_ssize_t keylen[MAX_KEYS];
    char kinds[MAX_KEYS];
    uint32_t bylen[KEY_LENS + 1]; /* bit k: keys[k] has this length */
    Buf fixed[MAX_KEYS];    /* 'i' int64, 'f' int8, 'p' uint64 */
    int prefix;             /* the 'p' key, -1 when none */
    DictCol dict[MAX_KEYS]; /* 'r', 'v' raw, 't' tagged */
    size_t row; /* the event being scanned */
} Scan;

/* Scan states kept with their buffers' memory from chunk to chunk (see scan()): one per
 * thread scanning at once, up to SCAN_SLOTS; the GIL guards the busy flags. */
#define SCAN_SLOTS 8
static Scan slots[SCAN_SLOTS];
static int slot_busy[SCAN_SLOTS];

#define SCAN_DICTS(sc) {&(sc)->name, &(sc)->cat, &(sc)->pid, &(sc)->tid, &(sc)->fid, &(sc)->bp}
#define N_DICTS 6

/* Every buffer of the scan (free: released; else emptied, its memory kept for the next). */
static void scan_clear(Scan *sc, int free_memory) {
    DictCol *dicts[] = SCAN_DICTS(sc);
    Buf *bufs[2 + 3 + MAX_KEYS];
    size_t nb = 0;
    bufs[nb++] = &sc->ph;
    bufs[nb++] = &sc->ts;
    bufs[nb++] = &sc->dur;
    bufs[nb++] = &sc->args.off;
    bufs[nb++] = &sc->args.data;
    sc->args.started = 0;
    for (size_t k = 0; k < N_DICTS; k++) dict_clear(dicts[k], free_memory);
    for (int k = 0; k < MAX_KEYS; k++) {
        bufs[nb++] = &sc->fixed[k];
        dict_clear(&sc->dict[k], free_memory);
    }
    for (size_t k = 0; k < nb; k++) {
        bufs[k]->len = 0;
        if (free_memory) {
            free(bufs[k]->p);
            bufs[k]->p = NULL;
            bufs[k]->cap = 0;
        }
    }
    sc->row = 0;
}

/* Open the object at c->i: 1 when a member follows, 0 for an empty object, -1 reject. */
static int object_open(Cur *c) {
    if (c->i >= c->n || c->s[c->i] != '{') return -1;
    c->i++;
    skip_ws(c);
    if (c->i < c->n && c->s[c->i] == '}') {
        c->i++;
        return 0;
    }
    return 1;
}

/* A member's key (unescaped only: its span in the input) and the colon after it. */
static int member_key(Cur *c, size_t *kstart, size_t *klen) {
    if (c->i >= c->n || c->s[c->i] != '"') return -1;
    *kstart = c->i + 1;
    int escaped;
    if (parse_string(c, NULL, &escaped) || escaped) return -1;
    *klen = c->i - 1 - *kstart;
    skip_ws(c);
    if (c->i >= c->n || c->s[c->i] != ':') return -1;
    c->i++;
    skip_ws(c);
    return c->i < c->n ? 0 : -1;
}

/* After a value: 1 when another member follows, 0 when the object closed, -1 reject. */
static int member_next(Cur *c) {
    skip_ws(c);
    if (c->i >= c->n) return -1;
    if (c->s[c->i] == ',') {
        c->i++;
        skip_ws(c);
        return 1;
    }
    if (c->s[c->i] != '}') return -1;
    c->i++;
    return 0;
}

/* The args object at c->i: copied whole, and the keys we read taken out of it. */
static int parse_args(Cur *c, Scan *sc) {
    size_t start = c->i;
    uint32_t seen = 0;
    int more = object_open(c);
    while (more > 0) {
        {
            size_t kstart, klen;
            if (member_key(c, &kstart, &klen)) return -1;
            int which = -1;
            /* only the wanted keys of this length (bucket KEY_LENS: every longer key) */
            for (uint32_t m = sc->bylen[klen < KEY_LENS ? klen : KEY_LENS]; m; m &= m - 1) {
                int k = __builtin_ctz(m);
                if ((size_t)sc->keylen[k] == klen && !memcmp(sc->keys[k], c->s + kstart, klen)) {
                    which = k;
                    break;
                }
            }
            if (which < 0) {
                int p = sc->prefix;
                /* a key with the prefix: one byte compared for most keys (no 'h' first) */
                if (p >= 0 && (Py_ssize_t)klen > sc->keylen[p] && c->s[kstart] == sc->keys[p][0] &&
                    !memcmp(c->s + kstart, sc->keys[p], (size_t)sc->keylen[p])) {
                    uint64_t *mark = (uint64_t *)(sc->fixed[p].p) + (sc->fixed[p].len / 8 - 1);
                    *mark |= key_bucket(c->s + kstart, klen);
                }
                if (skip_value(c, 1)) return -1;
            } else {
                if (seen & (1u << which)) return -1; /* a duplicate key */
                seen |= 1u << which;
                if (c->i >= c->n) return -1;
                char kind = sc->kinds[which];
                unsigned char ch = c->s[c->i];
                if (kind == 'i') {
                    int64_t v = NO_ID;
                    if (ch == 'n') {
                        if (expect_literal(c, "null", 4)) return -1;
                    } else if (ch == '"') {
                        if (string_id(c, &v)) return -1;
                    } else {
                        Num num;
                        if (parse_number(c, &num) || number_int64(c->s, &num, &v)) return -1;
                    }
                    int64_t *slot = (int64_t *)(sc->fixed[which].p) + (sc->fixed[which].len / 8 - 1);
                    *slot = v;
                } else if (kind == 'f') {
                    signed char f;
                    if (ch == 'n') {
                        if (expect_literal(c, "null", 4)) return -1;
                        f = -1;
                    } else if (ch == 't') {
                        if (expect_literal(c, "true", 4)) return -1;
                        f = 1;
                    } else if (ch == 'f') {
                        if (expect_literal(c, "false", 5)) return -1;
                        f = 0;
                    } else {
                        return -1;
                    }
                    sc->fixed[which].p[sc->fixed[which].len - 1] = (char)f;
                } else if (kind == 'r' || kind == 'v') {
                    size_t vstart = c->i;
                    /* 'r' an array; null and other types: left to msgspec (absent, or an
                     * error). 'v' any value, null included, as written */
                    if ((kind == 'r' && ch != '[') || skip_value(c, 1)) return -1;
                    if (buf_put(&sc->dict[which].data, c->s + vstart, c->i - vstart)) return -1;
                } else {
                    Buf *data = &sc->dict[which].data;
                    size_t before = data->len;
                    if (tagged_value(c, data, 1)) return -1;
                    if (data->len == before + 1 && data->p[before] == 'n') data->len = before;
                }
            }
        }
        more = member_next(c);
    }
    if (more < 0) return -1;
    if (sc->spans) {
        sc->arg_start = start;
        sc->arg_len = c->i - start;
        return 0;
    }
    return buf_put(&sc->args.data, c->s + start, c->i - start);
}

/* A key kind kept dictionary-encoded ('r' array, 't' tagged, 'v' any value as written). */
#define IS_DICT_KIND(kind) ((kind) == 'r' || (kind) == 't' || (kind) == 'v')

static int is_flow(unsigned char ph) { return ph == 's' || ph == 't' || ph == 'f'; }

static int parse_event(Cur *c, Scan *sc) {
    /* every column gets this row's default; values found overwrite or append */
    unsigned char ph = 0;
    double ts = NAN, dur = NAN;
    int64_t no_id = NO_ID;
    signed char absent_flag = -1;
    uint64_t no_prefix = 0;
    for (int k = 0; k < sc->nkeys; k++) {
        if (sc->kinds[k] == 'i' && buf_put(&sc->fixed[k], &no_id, 8)) return -1;
        if (sc->kinds[k] == 'f' && buf_put(&sc->fixed[k], &absent_flag, 1)) return -1;
        if (sc->kinds[k] == 'p' && buf_put(&sc->fixed[k], &no_prefix, 8)) return -1;
    }
    size_t id_start = 0, id_end = 0; /* the id value's span, tagged once the phase is known */
    size_t bp_start = 0, bp_end = 0;
    int has_pid = 0, has_tid = 0;
    unsigned seen = 0;
    sc->arg_start = sc->arg_len = 0;
    int more = object_open(c);
    while (more > 0) {
        {
            size_t kstart, klen;
            if (member_key(c, &kstart, &klen)) return -1;
            int key = event_key(c->s + kstart, klen);
            if (key != K_OTHER) {
                if (seen & (1u << key)) return -1;
                seen |= 1u << key;
            }
            unsigned char ch = c->s[c->i];
            Num num;
            switch (key) {
                case K_PH: {
                    size_t before = c->i;
                    if (ch != '"' || parse_string(c, NULL, NULL)) return -1;
                    if (c->i - before != 3) return -1; /* one ASCII letter, unescaped */
                    ph = c->s[before + 1];
                    if (ph < 0x21 || ph >= 0x7F || ph == '\\') return -1;
                    break;
                }
                case K_NAME:
                case K_CAT: {
                    DictCol *col = key == K_NAME ? &sc->name : &sc->cat;
                    if (ch != '"' || parse_string(c, &col->data, NULL)) return -1;
                    break;
                }
                case K_PID:
                case K_TID: {
                    DictCol *col = key == K_PID ? &sc->pid : &sc->tid;
                    if (ch == 'n' || tagged_value(c, &col->data, 1)) return -1;
                    if (key == K_PID)
                        has_pid = 1;
                    else
                        has_tid = 1;
                    break;
                }
                case K_TS:
                case K_DUR: {
                    double *v = key == K_TS ? &ts : &dur;
                    if (ch == 'n') {
                        if (expect_literal(c, "null", 4)) return -1;
                    } else if (parse_number(c, &num) || number_double(c->s, &num, v)) {
                        return -1;
                    }
                    break;
                }
                case K_ID:
                    id_start = c->i;
                    if (skip_value(c, 1)) return -1;
                    id_end = c->i;
                    break;
                case K_BP:
                    if (ch != '"') return -1;
                    bp_start = c->i;
                    if (parse_string(c, NULL, NULL)) return -1;
                    bp_end = c->i;
                    break;
                case K_ARGS:
                    if (parse_args(c, sc)) return -1;
                    break;
                default:
                    if (skip_value(c, 1)) return -1;
            }
        }
        more = member_next(c);
    }
    if (more < 0) return -1;
    if (!ph) return -1; /* no phase: the msgspec path codes "" */
    char s_tag = 's';
    if (!has_pid && buf_put(&sc->pid.data, &s_tag, 1)) return -1;
    if (!has_tid && buf_put(&sc->tid.data, &s_tag, 1)) return -1;
    if (is_flow(ph)) { /* flow ids of other rows stay empty: absent, like 'n' */
        if (id_end > id_start) {
            Cur sub = {c->s, id_end, id_start};
            if (tagged_value(&sub, &sc->fid.data, 1)) return -1;
        }
        if (bp_end > bp_start) {
            Cur sub = {c->s, bp_end, bp_start};
            if (parse_string(&sub, &sc->bp.data, NULL)) return -1;
        }
    }
    if (buf_put(&sc->ph, &ph, 1) || buf_put(&sc->ts, &ts, 8) || buf_put(&sc->dur, &dur, 8))
        return -1;
    DictCol *dicts[] = SCAN_DICTS(sc);
    size_t row = sc->row++;
    for (size_t k = 0; k < N_DICTS; k++)
        if (dict_end(dicts[k], row)) return -1;
    if (sc->spans) {
        int64_t start = (int64_t)sc->arg_start, len = (int64_t)sc->arg_len;
        if (buf_put(&sc->args.off, &start, 8) || buf_put(&sc->args.data, &len, 8)) return -1;
    } else if (var_end(&sc->args, row)) {
        return -1;
    }
    for (int k = 0; k < sc->nkeys; k++)
        if (IS_DICT_KIND(sc->kinds[k]) && dict_end(&sc->dict[k], row)) return -1;
    return 0;
}

static PyObject *bytes_of(Buf *b) { return PyBytes_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->len); }

/* (offsets, data) of the args column of n rows (n+1 zero offsets when it never started);
 * with `spans`, (starts, lengths) as written. */
static PyObject *pair_of(VarCol *c, Py_ssize_t n, int spans) {
    PyObject *off;
    if (c->started || spans)
        off = bytes_of(&c->off);
    else {
        off = PyBytes_FromStringAndSize(NULL, (n + 1) * 8);
        if (off) memset(PyBytes_AS_STRING(off), 0, (size_t)(n + 1) * 8);
    }
    PyObject *data = off ? bytes_of(&c->data) : NULL;
    if (!data) {
        Py_XDECREF(off);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, off, data);
    Py_DECREF(off);
    Py_DECREF(data);
    return pair;
}

/* (offsets, data, indices) of a dictionary-encoded column, None when no row had a value. */
static PyObject *dict_of(DictCol *d) {
    if (!d->started) Py_RETURN_NONE;
    PyObject *off = bytes_of(&d->off), *data = bytes_of(&d->data), *idx = bytes_of(&d->idx);
    PyObject *triple = off && data && idx ? PyTuple_Pack(3, off, data, idx) : NULL;
    Py_XDECREF(off);
    Py_XDECREF(data);
    Py_XDECREF(idx);
    return triple;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    PyObject *keys;
    const char *kinds;
    Py_ssize_t nkinds;
    int spans = 0;
    if (!PyArg_ParseTuple(args, "y*O!y#|p", &view, &PyTuple_Type, &keys, &kinds, &nkinds, &spans))
        return NULL;
    /* a free slot's buffers keep their memory from chunk to chunk (no growth, no fresh
     * pages per chunk) until `release()`; with every slot busy, a call gets its own */
    Scan local, *sc = NULL;
    int slot = -1;
    for (int k = 0; k < SCAN_SLOTS && slot < 0; k++)
        if (!slot_busy[k]) slot = k;
    if (slot >= 0) {
        slot_busy[slot] = 1;
        sc = &slots[slot];
    } else {
        memset(&local, 0, sizeof local);
        sc = &local;
    }
    scan_clear(sc, 0);
    sc->spans = spans;
    PyObject *result = NULL;
    Py_ssize_t nkeys = PyTuple_GET_SIZE(keys);
    if (nkeys != nkinds || nkeys > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "one kind per key, at most 32 keys");
        goto done;
    }
    sc->nkeys = (int)nkeys;
    sc->prefix = -1;
    memset(sc->bylen, 0, sizeof sc->bylen);
    for (Py_ssize_t k = 0; k < nkeys; k++) {
        PyObject *key = PyTuple_GET_ITEM(keys, k);
        char kind = kinds[k];
        if (!PyBytes_Check(key) || !strchr("irtfvp", kind) || !kind ||
            (kind == 'p' && (sc->prefix >= 0 || PyBytes_GET_SIZE(key) == 0))) {
            PyErr_SetString(PyExc_ValueError,
                            "keys are bytes, kinds one of 'irtfvp' (one non-empty prefix 'p')");
            goto done;
        }
        sc->keys[k] = PyBytes_AS_STRING(key);
        sc->keylen[k] = PyBytes_GET_SIZE(key);
        sc->kinds[k] = kind;
        if (kind == 'p') { /* matched by prefix, not among the keys of its length */
            sc->prefix = (int)k;
            continue;
        }
        Py_ssize_t len = sc->keylen[k];
        sc->bylen[len < KEY_LENS ? len : KEY_LENS] |= 1u << k;
    }
    DictCol *dicts[] = SCAN_DICTS(sc);
    int failed = 0;
    Py_ssize_t n = 0;
    if (!failed) {
        Py_BEGIN_ALLOW_THREADS;
        Cur c = {(const unsigned char *)view.buf, (size_t)view.len, 0};
        skip_ws(&c);
        if (c.i < c.n) {
            for (;;) {
                if (parse_event(&c, sc)) {
                    failed = 1;
                    break;
                }
                n++;
                skip_ws(&c);
                if (c.i >= c.n) break;
                if (c.s[c.i] != ',') {
                    failed = 1;
                    break;
                }
                c.i++;
                skip_ws(&c);
            }
        }
        Py_END_ALLOW_THREADS;
    }
    if (failed) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    result = PyTuple_New(11 + nkeys);
    if (!result) goto done;
    PyObject *items[11];
    items[0] = PyLong_FromSsize_t(n);
    items[1] = bytes_of(&sc->ph);
    items[2] = bytes_of(&sc->ts);
    items[3] = bytes_of(&sc->dur);
    for (int k = 0; k < N_DICTS; k++) items[4 + k] = dict_of(dicts[k]);
    items[10] = pair_of(&sc->args, n, spans);
    for (int k = 0; k < 11; k++) {
        if (!items[k]) {
            Py_CLEAR(result);
            for (int j = k + 1; j < 11; j++) Py_XDECREF(items[j]);
            goto done;
        }
        PyTuple_SET_ITEM(result, k, items[k]);
    }
    for (int k = 0; k < sc->nkeys; k++) {
        char kind = sc->kinds[k];
        PyObject *col =
            strchr("ifp", kind) ? bytes_of(&sc->fixed[k]) : dict_of(&sc->dict[k]);
        if (!col) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, 11 + k, col);
    }
done:
    scan_clear(sc, slot < 0);
    if (slot >= 0) slot_busy[slot] = 0;
    PyBuffer_Release(&view);
    return result;
}

static PyObject *release(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    for (int k = 0; k < SCAN_SLOTS; k++)
        if (!slot_busy[k]) scan_clear(&slots[k], 1);
    Py_RETURN_NONE;
}

/* gather(pieces, row_bases, starts, rows, out_offsets, out) -> None
 *   pieces: sequence of k byte buffers; row_bases: k+1 int64 (piece j holds rows
 *   row_bases[j] .. row_bases[j+1]); starts: int64 per row (its first byte in its piece);
 *   rows: n int64; out_offsets: n+1 int64 (row i's bytes go to out[out_offsets[i]:...+1]);
 *   out: a writable buffer. Copies each taken row's bytes from its piece (no joined copy of
 *   the pieces). ValueError/IndexError on inconsistent input. */
static PyObject *gather(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *pieces;
    Py_buffer bases, starts, rows, offs, out;
    if (!PyArg_ParseTuple(args, "Oy*y*y*y*w*", &pieces, &bases, &starts, &rows, &offs, &out))
        return NULL;
    PyObject *result = NULL;
    Py_buffer *views = NULL;
    Py_ssize_t k = 0, got = 0;
    PyObject *seq = PySequence_Fast(pieces, "pieces must be a sequence");
    if (!seq) goto done;
    k = PySequence_Fast_GET_SIZE(seq);
    const int64_t *base = bases.buf, *start = starts.buf, *row = rows.buf, *off = offs.buf;
    Py_ssize_t total = starts.len / 8, n = rows.len / 8;
    if (bases.len != (k + 1) * 8 || offs.len != (n + 1) * 8 || base[0] != 0 || base[k] != total) {
        PyErr_SetString(PyExc_ValueError, "gather: inconsistent sizes");
        goto done;
    }
    views = PyMem_Calloc((size_t)(k ? k : 1), sizeof(Py_buffer));
    if (!views) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < k; got++)
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &views[got], PyBUF_SIMPLE) < 0)
            goto done;
    Py_ssize_t p = 0;
    const char *problem = NULL;
    Py_BEGIN_ALLOW_THREADS; /* plain copies: other threads run meanwhile */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t r = row[i], len = off[i + 1] - off[i];
        if (r < 0 || r >= total || len < 0 || off[i] < 0 || off[i + 1] > out.len) {
            problem = "gather: row or offset out of range";
            break;
        }
        if (r < base[p] || r >= base[p + 1]) { /* rows are nearly sorted: search only on a move */
            Py_ssize_t lo = 0, hi = k;
            while (hi - lo > 1) {
                Py_ssize_t mid = (lo + hi) / 2;
                if (base[mid] <= r) lo = mid; else hi = mid;
            }
            p = lo;
        }
        if (start[r] < 0 || start[r] + len > views[p].len) {
            problem = "gather: row bytes outside their piece";
            break;
        }
        memcpy((char *)out.buf + off[i], (const char *)views[p].buf + start[r], (size_t)len);
    }
    Py_END_ALLOW_THREADS;
    if (problem) {
        PyErr_SetString(PyExc_IndexError, problem);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    for (Py_ssize_t j = 0; j < got; j++) PyBuffer_Release(&views[j]);
    PyMem_Free(views);
    Py_XDECREF(seq);
    PyBuffer_Release(&bases);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&out);
    return result;
}

/* nest(lane, start, end, depth, parent) -> None
 *   lane, start, end: n int64 each, the slices sorted by (lane, start, -duration, position);
 *   depth, parent: n int64 each, written. One pass per lane (nesting.nest's rules): a row's
 *   depth is the number of earlier rows of its lane that end strictly after it starts (a
 *   min-heap of those rows' ends; every later row starts no earlier, so a row that ends at or
 *   before one row's start never counts again); its parent is the last earlier row of its
 *   lane one level up (NO_ID at depth 0). ValueError on inconsistent sizes. */
static PyObject *nest(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer lanes, starts, ends, depths, parents;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*", &lanes, &starts, &ends, &depths, &parents))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = lanes.len / 8;
    int64_t *heap = NULL, *last = NULL;
    if (starts.len != n * 8 || ends.len != n * 8 || depths.len != n * 8 || parents.len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "nest: arrays of different sizes");
        goto done;
    }
    heap = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *heap); /* ends of the open rows */
    last = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *last); /* last row at each depth */
    if (!heap || !last) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *lane = lanes.buf, *start = starts.buf, *end = ends.buf;
    int64_t *depth = depths.buf, *parent = parents.buf;
    Py_BEGIN_ALLOW_THREADS;
    Py_ssize_t open = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || lane[i] != lane[i - 1]) open = 0; /* a new lane */
        int64_t s = start[i];
        while (open && heap[0] <= s) { /* pop the earliest end */
            int64_t moved = heap[--open];
            Py_ssize_t at = 0;
            for (;;) {
                Py_ssize_t child = 2 * at + 1;
                if (child >= open) break;
                if (child + 1 < open && heap[child + 1] < heap[child]) child++;
                if (heap[child] >= moved) break;
                heap[at] = heap[child];
                at = child;
            }
            heap[at] = moved;
        }
        depth[i] = open;
        parent[i] = open ? last[open - 1] : NO_ID;
        last[open] = i;
        Py_ssize_t at = open++; /* push this row's end */
        while (at > 0 && heap[(at - 1) / 2] > end[i]) {
            heap[at] = heap[(at - 1) / 2];
            at = (at - 1) / 2;
        }
        heap[at] = end[i];
    }
    Py_END_ALLOW_THREADS;
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(heap);
    PyMem_Free(last);
    PyBuffer_Release(&lanes);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&depths);
    PyBuffer_Release(&parents);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buffer, arg_keys, arg_kinds) -> tuple of columns, or None to use the msgspec path"},
    {"gather", gather, METH_VARARGS,
     "gather(pieces, row_bases, starts, rows, out_offsets, out) -> None: rows' bytes into out"},
    {"nest", nest, METH_VARARGS,
     "nest(lane, start, end, depth, parent) -> None: depth and parent of sorted slices"},
    {"release", release, METH_NOARGS, "release() -> None: free the scan buffers kept for reuse"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kineto_scan", "Compiled Kineto traceEvents scanner.", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* Bump KINETO_SCAN_ABI whenever scan/gather/release change their arguments or results;
   fastscan.py ignores a built module of another ABI (a stale .so from an older checkout). */
#define KINETO_SCAN_ABI 6

PyMODINIT_FUNC PyInit__kineto_scan(void) {
    init_plain();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "ABI", KINETO_SCAN_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
