package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout is how long the host waits for a plugin that makes no
// progress before it stops the plugin: a call that does not return, a read
// whose next chunk does not come, a write whose slots are not released.
const DefaultTimeout = 10 * time.Minute

// ErrPluginHung is wrapped by the error of a plugin the host stopped because
// it made no progress.
var ErrPluginHung = errors.New("plugin made no progress")

// HangError reports a plugin that made no progress for longer than the
// host's timeout. The host stops the plugin process; the run fails and every
// sink is aborted.
type HangError struct {
	// Label names the plugin, e.g. `plugin "gguf"`.
	Label string
	// Op is what the host was waiting for: "Describe", `the next chunk of
	// tensor "w"`, `tensor "w" to be written`.
	Op string
	// Timeout is the time waited.
	Timeout time.Duration
	// Stderr holds the last lines the plugin wrote to stderr.
	Stderr []string
}

func (e *HangError) Error() string {
	label := e.Label
	if label == "" {
		label = "the plugin"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s made no progress for %s waiting for %s, so it was stopped (if it is only slow, raise --plugin-timeout)", label, e.Timeout, e.Op)
	if len(e.Stderr) > 0 {
		b.WriteString("; last lines of its stderr:\n")
		for _, l := range e.Stderr {
			b.WriteString("    " + l + "\n")
		}
		return strings.TrimRight(b.String(), "\n")
	}
	return b.String()
}

// Unwrap returns ErrPluginHung.
func (e *HangError) Unwrap() error { return ErrPluginHung }

// unary bounds one call by the client's timeout. The returned context's
// cause is a *HangError when the timeout expires. It is a timer, not a
// deadline: gRPC would send a deadline to the plugin, whose end of the call
// could then expire first and return an error (a reset stream) before the
// host's own context says the watchdog ended it.
func (c *rpcClient) unary(ctx context.Context, op string) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	he := &HangError{Op: op, Timeout: c.timeout}
	ctx, cancel := context.WithCancelCause(context.WithValue(ctx, hangKey{}, he))
	timer := time.AfterFunc(c.timeout, func() { cancel(he) })
	return ctx, func() {
		timer.Stop()
		cancel(context.Canceled)
	}
}

// hangKey holds, in a context, the *HangError its own watchdog or deadline
// ends it with.
type hangKey struct{}

// callErr turns the error of a call (or stream) made under ctx into a
// *HangError, stopping the plugin, when the watchdog expired; otherwise into
// the plugin's error.
func (c *rpcClient) callErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if he := hangOf(ctx); he != nil {
		if c.onHang != nil {
			c.onHang(he)
		}
		return he
	}
	return c.err(err)
}

// hangOf returns the *HangError that ended ctx, or nil. Only the error of
// ctx's own watchdog or deadline counts: a context canceled because another
// plugin hung (an errgroup's, whose cause is that error) is not a hang of
// this plugin.
func hangOf(ctx context.Context) *HangError {
	he, _ := ctx.Value(hangKey{}).(*HangError)
	if he != nil && context.Cause(ctx) == error(he) {
		return he
	}
	return nil
}

// watchdog cancels a stream when the plugin keeps the host waiting longer
// than the timeout. It counts only the time the host waits for the plugin
// (armed), never the time the host itself takes. It is a timer, not a
// goroutine: a run watches every tensor it moves.
type watchdog struct {
	timeout time.Duration
	he      *HangError    // the error the watchdog ends the stream with
	op      func() string // what is awaited, for he; called if it fires
	cancel  context.CancelCauseFunc

	mu      sync.Mutex
	waiting int       // operations waiting for the plugin
	since   time.Time // when the wait began, or the last progress
	timer   *time.Timer
	stopped bool
}

// watch returns a context for a stream and its watchdog; stop the watchdog
// when the stream ends. Without a timeout the watchdog does nothing. op
// says what the host waits for, `tensor "w" to be written`; it is called
// only when the watchdog fires.
func (c *rpcClient) watch(ctx context.Context, op func() string) (context.Context, *watchdog) {
	he := &HangError{Timeout: c.timeout}
	ctx, cancel := context.WithCancelCause(context.WithValue(ctx, hangKey{}, he))
	w := &watchdog{timeout: c.timeout, he: he, op: op, cancel: cancel}
	if c.timeout > 0 {
		w.mu.Lock()
		w.timer = time.AfterFunc(c.timeout, w.check)
		w.mu.Unlock()
	}
	return ctx, w
}

// check ends the stream when a wait has lasted the timeout, and otherwise
// sets the timer for when the current wait would reach it (or a timeout
// from now, when nothing waits).
func (w *watchdog) check() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	next := w.timeout
	if w.waiting > 0 {
		waited := time.Since(w.since)
		if waited >= w.timeout {
			w.stopped = true
			w.mu.Unlock()
			w.he.Op = w.op()
			w.cancel(w.he)
			return
		}
		next = w.timeout - waited
	}
	w.timer.Reset(next)
	w.mu.Unlock()
}

// wait marks the start of a wait for the plugin; call the returned function
// when it ends.
func (w *watchdog) wait() func() {
	w.begin()
	return w.end
}

// begin marks the start of one wait for the plugin (a slot it holds, a call
// it has to answer); end marks its end.
func (w *watchdog) begin() {
	w.mu.Lock()
	if w.waiting == 0 {
		w.since = time.Now()
	}
	w.waiting++
	w.mu.Unlock()
}

func (w *watchdog) end() {
	w.mu.Lock()
	w.waiting--
	w.mu.Unlock()
}

// progress records that the plugin did something: the wait starts over.
func (w *watchdog) progress() {
	w.mu.Lock()
	w.since = time.Now()
	w.mu.Unlock()
}

// stop ends the watchdog and releases its context.
func (w *watchdog) stop() {
	w.mu.Lock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	w.cancel(context.Canceled)
}
