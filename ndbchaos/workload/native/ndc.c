/* ndbchaos native client loop: one connection of a worker, single-statement events on
 * server-side prepared statements (libmariadb), recorded into preallocated column buffers.
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
#include <string.h>
#include <time.h>
#include <mysql.h>

#define NDC_VERSION 1

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
    char row_buf[512], str_buf[512];
    unsigned long row_len, str_len;
    my_bool row_null, row_err;
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

static int connect_db(struct ndc *s)
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

static int prepare(struct ndc *s)
{
    s->st = mysql_stmt_init(s->my);
    if (!s->st) { fail_from(s, mysql_errno(s->my), mysql_error(s->my)); return -1; }
    if (mysql_stmt_prepare(s->st, s->sql, (unsigned long)strlen(s->sql))) goto err;
    MYSQL_BIND pb[2];
    int k = 0;
    memset(pb, 0, sizeof pb);
    if (s->op == OP_UPDATE_STR_ID) {
        s->str_len = (unsigned long)s->pool_len;
        pb[0].buffer_type = MYSQL_TYPE_STRING;
        pb[0].buffer = s->str_buf;
        pb[0].buffer_length = sizeof s->str_buf;
        pb[0].length = &s->str_len;
        k = 1;
    }
    pb[k].buffer_type = MYSQL_TYPE_LONGLONG;
    pb[k].buffer = &s->cur_id;
    if (mysql_stmt_bind_param(s->st, pb)) goto err;
    if (s->op == OP_SELECT_ROWS) {
        MYSQL_BIND rb;
        memset(&rb, 0, sizeof rb);
        rb.buffer_type = MYSQL_TYPE_STRING;
        rb.buffer = s->row_buf;
        rb.buffer_length = sizeof s->row_buf;
        rb.length = &s->row_len;
        rb.is_null = &s->row_null;
        rb.error = &s->row_err;
        if (mysql_stmt_bind_result(s->st, &rb)) goto err;
    }
    return 0;
err:
    fail_from(s, mysql_stmt_errno(s->st), mysql_stmt_error(s->st));
    mysql_stmt_close(s->st);
    s->st = NULL;
    return -1;
}

static int execute(struct ndc *s)
{
    if (s->op == OP_UPDATE_STR_ID)
        memcpy(s->str_buf, s->pool + (size_t)s->cur_c * (size_t)s->pool_len, (size_t)s->pool_len);
    if (mysql_stmt_execute(s->st)) goto err;
    if (s->op == OP_SELECT_ROWS) {
        int r;
        while ((r = mysql_stmt_fetch(s->st)) == 0 || r == MYSQL_DATA_TRUNCATED)
            ;
        if (r != MYSQL_NO_DATA) {
            /* a result broken off half-way leaves the connection out of step: start afresh */
            fail_from(s, mysql_stmt_errno(s->st), mysql_stmt_error(s->st));
            drop(s);
            return -1;
        }
        mysql_stmt_free_result(s->st);
    }
    return 0;
err:
    fail_from(s, mysql_stmt_errno(s->st), mysql_stmt_error(s->st));
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
