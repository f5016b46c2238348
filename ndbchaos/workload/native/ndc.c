/* ndbchaos native client loop: one connection of a worker, single-statement events on
 * server-side prepared statements, recorded into preallocated column buffers.
 *
 * libmariadb connects, authenticates and prepares the statement. Each execution then speaks the
 * binary protocol on the connection's socket itself (COM_STMT_EXECUTE out, one blocking read of
 * the reply), which is the per-statement path that costs the client CPU: libmariadb reads every
 * reply with a non-blocking recv that finds nothing yet, then poll, then recv again (three calls
 * where one blocking recv does), and converts each row into bound buffers this loop never reads.
 * The socket keeps libmariadb's read and write timeouts (SO_RCVTIMEO / SO_SNDTIMEO, set again
 * here after connecting), and a failure reports the error number and text libmariadb reports
 * for the same event: the server's ERR packet as sent; 2006 when the command cannot be written;
 * 2013 when the reply does not come (closed, reset, or the read timeout); 2027 for a reply this
 * loop does not understand, after which the connection is dropped.
 *
 * The Python side (ndbchaos/workload/native/__init__.py) owns every byte of the state below
 * (a ctypes Structure with the same layout) and calls ndc_run() from one thread per connection;
 * the call releases the GIL and returns when the buffers are full, the stop flag is set, or an
 * operation failed (the failure is then described in fail_*; the Python side classifies it,
 * records it, and says through close_conn / retry / process what to do next, exactly as the
 * Python client loop would).
 *
 * Times are CLOCK_MONOTONIC seconds minus mono0 (the run clock's origin), like time.monotonic().
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <mysql.h>

#define NDC_VERSION 2

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the wire encoding below copies integers as they are in memory: little-endian hosts only"
#endif

enum { OP_SELECT_ROWS = 0, OP_UPDATE_STR_ID = 1, OP_UPDATE_ID = 2 };

struct ndc {
    /* configuration (set once) */
    const char *host, *user, *password, *db, *sql;
    int32_t port, connect_timeout, read_timeout, write_timeout;
    int32_t op;              /* OP_* */
    int32_t capacity;        /* entries of start/end/value */
    int64_t n;               /* ids are uniform over 1..n */
    const char *pool;        /* pool_n strings of pool_len bytes (the new c values) */
    int32_t pool_n, pool_len;
    double mono0, interval;  /* interval > 0: open loop, one op per interval */
    volatile int32_t *stop;
    double *start, *end;
    int64_t *value;
    /* state, read and written by both sides between calls */
    volatile double *live;   /* last successful op end (run clock) of this connection's node */
    double next_t;           /* open loop: monotonic time of the next op */
    uint64_t rng[4];
    int32_t process;
    int32_t retry;           /* in: run the failed op again (same id and string) */
    int32_t close_conn;      /* in: close the connection before the next op */
    int32_t connected;       /* out */
    int64_t count;           /* out: successful ops so far */
    /* the failure that ended the last call (failed = 1) */
    int32_t failed, fail_errno, fail_sent, fail_retried;
    double fail_start, fail_end;
    int64_t fail_value;
    char fail_msg[512];
    /* private */
    int64_t cur_id;
    int32_t cur_c, cur_retried;
    MYSQL *my;
    MYSQL_STMT *st;
    struct wire *w;          /* the statement's socket, while prepared */
};

/* The binary protocol on the prepared statement's socket. */
#define WIRE_BUF 65536
struct wire {
    int fd;
    uint32_t stmt_id;
    int nparams;
    int types_sent;          /* the server keeps parameter types from the first execution on */
    size_t pos, len;         /* unread reply bytes: rbuf[pos..len) */
    unsigned char out[1024];
    unsigned char rbuf[WIRE_BUF];
};

int ndc_version(void) { return NDC_VERSION; }

int ndc_struct_size(void) { return (int)sizeof(struct ndc); }

int ndc_init(void) { return mysql_library_init(0, NULL, NULL); }

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xoshiro256** */
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(uint64_t *s)
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return r;
}

void ndc_seed(struct ndc *s, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {  /* splitmix64 */
        uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        s->rng[i] = z ^ (z >> 31);
    }
}

/* uniform over 0..bound-1, unbiased (rejection) */
static uint64_t below(uint64_t *s, uint64_t bound)
{
    uint64_t lim = -bound % bound, r;
    do r = next_u64(s); while (r < lim);
    return r % bound;
}

/* one draw of sysbench's random id, for tests of the distribution */
int64_t ndc_draw(struct ndc *s) { return 1 + (int64_t)below(s->rng, (uint64_t)s->n); }

static void drop(struct ndc *s)
{
    free(s->w);
    s->w = NULL;
    if (s->st) { mysql_stmt_close(s->st); s->st = NULL; }
    if (s->my) { mysql_close(s->my); s->my = NULL; }
    s->connected = 0;
}

void ndc_close(struct ndc *s) { drop(s); }

static void fail_from(struct ndc *s, unsigned int no, const char *msg)
{
    s->fail_errno = (int32_t)no;
    snprintf(s->fail_msg, sizeof s->fail_msg, "%s", msg ? msg : "");
}

static int connect_once(struct ndc *s)
{
    unsigned int t;
    s->my = mysql_init(NULL);
    if (!s->my) { fail_from(s, 2008, "MySQL client ran out of memory"); return -1; }
    t = (unsigned int)s->connect_timeout; mysql_options(s->my, MYSQL_OPT_CONNECT_TIMEOUT, &t);
    t = (unsigned int)s->read_timeout; mysql_options(s->my, MYSQL_OPT_READ_TIMEOUT, &t);
    t = (unsigned int)s->write_timeout; mysql_options(s->my, MYSQL_OPT_WRITE_TIMEOUT, &t);
    if (!mysql_real_connect(s->my, s->host, s->user, s->password, s->db, (unsigned int)s->port, NULL, 0)
        || mysql_autocommit(s->my, 1)) {
        fail_from(s, mysql_errno(s->my), mysql_error(s->my));
        drop(s);
        return -1;
    }
    s->connected = 1;
    return 0;
}

/* One connect; again once when libmariadb's client plugins were found "not initialized" (2059,
   CR_AUTH_PLUGIN_CANNOT_LOAD): the library's own state, not the server's answer. Seen once at a
   worker's first connect (the handshake stops before authenticating, so nothing was executed);
   mysql_library_init initialises the plugins again if they were torn down. Counted for the
   process (ndc_plugin_retries: the driver logs it). */
static volatile int32_t plugin_retries;

int ndc_plugin_retries(void) { return plugin_retries; }

static int connect_db(struct ndc *s)
{
    if (connect_once(s) == 0)
        return 0;
    if (s->fail_errno != 2059 || !strstr(s->fail_msg, "not initialized"))
        return -1;
    __sync_fetch_and_add(&plugin_retries, 1);
    mysql_library_init(0, NULL, NULL);
    return connect_once(s);
}

static void set_timeout(int fd, int opt, int32_t seconds)
{
    struct timeval tv = { (time_t)(seconds > 0 ? seconds : 0), 0 };
    setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

static int prepare(struct ndc *s)
{
    int want = s->op == OP_UPDATE_STR_ID ? 2 : 1;
    if (s->op == OP_UPDATE_STR_ID && (s->pool_len < 0 || s->pool_len > 512)) {
        fail_from(s, 2034, "the strings of the update are longer than 512 bytes");
        return -1;
    }
    s->st = mysql_stmt_init(s->my);
    if (!s->st) { fail_from(s, mysql_errno(s->my), mysql_error(s->my)); return -1; }
    if (mysql_stmt_prepare(s->st, s->sql, (unsigned long)strlen(s->sql))) {
        fail_from(s, mysql_stmt_errno(s->st), mysql_stmt_error(s->st));
        mysql_stmt_close(s->st);
        s->st = NULL;
        return -1;
    }
    if ((int)mysql_stmt_param_count(s->st) != want) {
        fail_from(s, 2034, "the prepared statement does not take the parameters this loop binds");
        mysql_stmt_close(s->st);
        s->st = NULL;
        return -1;
    }
    s->w = malloc(sizeof *s->w);
    if (!s->w) { fail_from(s, 2008, "MySQL client ran out of memory"); drop(s); return -1; }
    s->w->fd = (int)mysql_get_socket(s->my);
    s->w->stmt_id = (uint32_t)s->st->stmt_id;
    s->w->nparams = want;
    s->w->types_sent = 0;
    s->w->pos = s->w->len = 0;
    set_timeout(s->w->fd, SO_RCVTIMEO, s->read_timeout);
    set_timeout(s->w->fd, SO_SNDTIMEO, s->write_timeout);
    return 0;
}

/* -- the binary protocol of one execution ------------------------------------------------------ */

enum { WIRE_OK = 0, WIRE_SERVER_ERROR = 1, WIRE_CUT_OFF = 2, WIRE_LOST = -1, WIRE_MALFORMED = -2 };

/* at least need unread bytes in rbuf (blocking reads, each bounded by SO_RCVTIMEO) */
static int wire_fill(struct wire *w, size_t need)
{
    if (need > WIRE_BUF) return WIRE_MALFORMED;
    if (w->len - w->pos >= need) return WIRE_OK;
    if (w->pos) {
        memmove(w->rbuf, w->rbuf + w->pos, w->len - w->pos);
        w->len -= w->pos;
        w->pos = 0;
    }
    while (w->len < need) {
        ssize_t r = recv(w->fd, w->rbuf + w->len, WIRE_BUF - w->len, 0);
        if (r > 0) { w->len += (size_t)r; continue; }
        if (r < 0 && errno == EINTR) continue;
        return WIRE_LOST;  /* closed (0), reset, or the read timeout (EAGAIN) */
    }
    return WIRE_OK;
}

/* the next packet's payload; valid until the next call */
static int wire_packet(struct wire *w, const unsigned char **p, size_t *n)
{
    int r = wire_fill(w, 4);
    if (r) return r;
    const unsigned char *h = w->rbuf + w->pos;
    size_t len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16;
    if ((r = wire_fill(w, 4 + len))) return r;
    *p = w->rbuf + w->pos + 4;
    *n = len;
    w->pos += 4 + len;
    return WIRE_OK;
}

/* a length-encoded integer at p (n bytes available); its size in *k, or 0 when malformed */
static uint64_t lenenc(const unsigned char *p, size_t n, size_t *k)
{
    size_t m = !n ? 0 : p[0] < 0xfb ? 1 : p[0] == 0xfc ? 3 : p[0] == 0xfd ? 4 : p[0] == 0xfe ? 9 : 0;
    uint64_t v = 0;
    *k = m <= n ? m : 0;
    if (!*k) return 0;
    if (m == 1) return p[0];
    for (size_t i = m - 1; i >= 1; i--) v = v << 8 | p[i];
    return v;
}

static void server_error(struct ndc *s, const unsigned char *p, size_t n)
{
    char msg[512];
    size_t at = n >= 9 && p[3] == '#' ? 9 : 3, m = n > at ? n - at : 0;
    if (m >= sizeof msg) m = sizeof msg - 1;
    memcpy(msg, p + at, m);
    msg[m] = 0;
    fail_from(s, n >= 3 ? (unsigned int)(p[1] | p[2] << 8) : 2027, msg);
}

static int send_execute(struct ndc *s, struct wire *w)
{
    unsigned char *o = w->out, *q = o + 4;
    int bound = !w->types_sent;
    *q++ = 0x17;  /* COM_STMT_EXECUTE */
    memcpy(q, &w->stmt_id, 4); q += 4;
    *q++ = 0;  /* no cursor */
    *q++ = 1; *q++ = 0; *q++ = 0; *q++ = 0;  /* iteration count */
    memset(q, 0, (size_t)(w->nparams + 7) / 8); q += (w->nparams + 7) / 8;  /* no NULLs */
    *q++ = (unsigned char)bound;
    if (bound) {
        if (s->op == OP_UPDATE_STR_ID) { *q++ = MYSQL_TYPE_STRING; *q++ = 0; }
        *q++ = MYSQL_TYPE_LONGLONG; *q++ = 0;
    }
    if (s->op == OP_UPDATE_STR_ID) {
        size_t len = (size_t)s->pool_len;
        const char *c = s->pool + (size_t)s->cur_c * len;
        if (len < 251) *q++ = (unsigned char)len;
        else { *q++ = 0xfc; *q++ = (unsigned char)len; *q++ = (unsigned char)(len >> 8); }
        memcpy(q, c, len); q += len;
    }
    memcpy(q, &s->cur_id, 8); q += 8;
    size_t plen = (size_t)(q - o) - 4, off = 0, total = plen + 4;
    o[0] = (unsigned char)plen; o[1] = (unsigned char)(plen >> 8); o[2] = (unsigned char)(plen >> 16);
    o[3] = 0;  /* sequence id: a command starts at 0 */
    while (off < total) {
        ssize_t r = send(w->fd, o + off, total - off, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return WIRE_LOST;
        off += (size_t)r;
    }
    w->types_sent = 1;
    return WIRE_OK;
}

/* the reply: an OK or ERR packet, or a binary result set (column count, the column definitions
 * unless the server skips them, EOF, rows, EOF) */
static int read_reply(struct ndc *s, struct wire *w)
{
    const unsigned char *p;
    size_t n, k;
    int r;
    for (;;) {
        if ((r = wire_packet(w, &p, &n))) return r;
        if (n >= 3 && p[0] == 0xff && p[1] == 0xff && p[2] == 0xff) continue;  /* progress report */
        break;
    }
    if (!n) return WIRE_MALFORMED;
    if (p[0] == 0xff) { server_error(s, p, n); return WIRE_SERVER_ERROR; }
    if (p[0] == 0x00) return WIRE_OK;
    uint64_t cols = lenenc(p, n, &k);
    if (!k || !cols || n > k + 1) return WIRE_MALFORMED;
    /* MariaDB's metadata cache: a flag after the count says whether the definitions follow
     * (the server skips those it sent before); the EOF after them comes either way */
    uint64_t defs = n == k || p[k] ? cols : 0;
    for (uint64_t i = 0; i <= defs; i++)
        if ((r = wire_packet(w, &p, &n))) return r;
    if (!n || p[0] != 0xfe || n >= 9) return WIRE_MALFORMED;
    for (;;) {
        if ((r = wire_packet(w, &p, &n))) return r;
        if (!n) return WIRE_MALFORMED;
        if (p[0] == 0x00) continue;  /* a row */
        if (p[0] == 0xfe && n < 9) {
            if (n >= 5 && (p[3] | p[4] << 8) & SERVER_MORE_RESULTS_EXIST) return WIRE_MALFORMED;
            return WIRE_OK;
        }
        if (p[0] == 0xff) { server_error(s, p, n); return WIRE_CUT_OFF; }
        return WIRE_MALFORMED;
    }
}

static int execute(struct ndc *s)
{
    struct wire *w = s->w;
    int r = send_execute(s, w);
    if (r) {
        fail_from(s, 2006, "Server has gone away");
        drop(s);
        return -1;
    }
    r = read_reply(s, w);
    if ((r == WIRE_OK || r == WIRE_SERVER_ERROR) && w->pos != w->len)
        r = WIRE_MALFORMED;  /* more than one reply: out of step */
    if (r == WIRE_OK) return 0;
    w->types_sent = 0;  /* after any failure the next execution states the types again */
    if (r == WIRE_SERVER_ERROR) return -1;  /* the connection stays in step */
    if (r == WIRE_LOST) fail_from(s, 2013, "Lost connection to server during query");
    else if (r == WIRE_MALFORMED) fail_from(s, 2027, "Received malformed packet");
    /* WIRE_CUT_OFF: an error in the middle of a result set, already described */
    drop(s);
    return -1;
}

static void pause_until(struct ndc *s, double t)
{
    double now;
    while (!*s->stop && (now = mono()) < t) {
        double d = t - now;
        if (d > 0.02) d = 0.02;  /* keep seeing the stop flag */
        struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

/* Run ops until the buffers are full, the stop flag is set or an op fails. Returns the number
 * of successful ops recorded in start/end/value (all by s->process); failed says whether a
 * failure follows them. */
int ndc_run(struct ndc *s)
{
    int n = 0;
    s->failed = 0;
    if (s->close_conn) { drop(s); s->close_conn = 0; }
    while (n < s->capacity && !*s->stop) {
        if (s->interval > 0) {
            pause_until(s, s->next_t);
            s->next_t += s->interval;
            if (*s->stop) break;
        }
        if (s->retry) {
            s->retry = 0;
            s->cur_retried = 1;
        } else {
            s->cur_retried = 0;
            if (s->op == OP_UPDATE_STR_ID)
                s->cur_c = (int32_t)below(s->rng, (uint64_t)s->pool_n);
            s->cur_id = 1 + (int64_t)below(s->rng, (uint64_t)s->n);
        }
        double t0 = mono(), t1;
        int sent = 0;
        if (!s->my && connect_db(s)) goto failed;
        sent = 1;
        if (!s->st && prepare(s)) goto failed;
        if (execute(s)) goto failed;
        t1 = mono() - s->mono0;
        s->start[n] = t0 - s->mono0;
        s->end[n] = t1;
        s->value[n] = s->cur_id;
        n++;
        s->count++;
        *s->live = t1;
        continue;
    failed:
        s->failed = 1;
        s->fail_sent = sent;
        s->fail_retried = s->cur_retried;
        s->fail_start = t0 - s->mono0;
        s->fail_end = mono() - s->mono0;
        s->fail_value = s->cur_id;
        break;
    }
    return n;
}
