package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/sluice-ml/sluice/sdk/bytesize"
)

// progress reports a run: a bar on a terminal, plain lines otherwise, JSON
// events with --json, nothing with --quiet.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	mode    string // "bar", "lines", "json", "quiet"
	bar     *progressbar.ProgressBar
	total   uint64
	done    uint64
	tensors int
	ndone   int
	start   time.Time
	lastPct int
	lastAt  time.Time
}

func (a *app) newProgress() *progress {
	p := &progress{w: a.stderr, mode: "lines"}
	switch {
	case a.quiet:
		p.mode = "quiet"
	case a.json:
		p.mode = "json"
		p.w = a.stdout
	default:
		if f, ok := terminalFile(a.stderr); ok && isatty.IsTerminal(f.Fd()) {
			p.mode = "bar"
		}
	}
	return p
}

func (p *progress) Start(total uint64, tensors int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.tensors, p.start, p.lastPct = total, tensors, time.Now(), -1
	switch p.mode {
	case "bar":
		p.bar = progressbar.NewOptions64(int64(total),
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetDescription("converting"),
			progressbar.OptionClearOnFinish(),
		)
	case "lines":
		fmt.Fprintf(p.w, "processing %d tensors, %s\n", tensors, bytesize.Human(total))
	}
}

func (p *progress) Advance(n uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	switch p.mode {
	case "bar":
		p.bar.Add64(int64(n))
	case "lines":
		pct := 100
		if p.total > 0 {
			pct = int(p.done * 100 / p.total)
		}
		if pct/10 > p.lastPct/10 && time.Since(p.lastAt) > time.Second || pct == 100 && p.lastPct != 100 {
			p.lastPct, p.lastAt = pct, time.Now()
			eta := ""
			if r := p.rate(); r > 0 && p.done < p.total {
				eta = ", ETA " + (time.Duration(float64(p.total-p.done) / float64(r) * float64(time.Second))).Round(time.Second).String()
			}
			fmt.Fprintf(p.w, "progress: %3d%% %s of %s, %s/s%s\n", pct, bytesize.Human(p.done), bytesize.Human(p.total), bytesize.Human(p.rate()), eta)
		}
	case "json":
		writeJSONLine(p.w, map[string]any{"event": "progress", "bytes": p.done, "total": p.total})
	}
}

func (p *progress) TensorDone(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ndone++
}

func (p *progress) rate() uint64 {
	s := time.Since(p.start).Seconds()
	if s <= 0 {
		return 0
	}
	return uint64(float64(p.done) / s)
}

func (p *progress) finish(ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.start.IsZero() {
		return
	}
	switch p.mode {
	case "bar":
		p.bar.Finish()
		if ok {
			fmt.Fprintf(p.w, "done: %d tensors, %s in %s (%s/s)\n", p.ndone, bytesize.Human(p.done), time.Since(p.start).Round(time.Millisecond), bytesize.Human(p.rate()))
		}
	case "lines":
		if ok {
			fmt.Fprintf(p.w, "done: %d tensors, %s in %s (%s/s)\n", p.ndone, bytesize.Human(p.done), time.Since(p.start).Round(time.Millisecond), bytesize.Human(p.rate()))
		}
	}
}

func writeJSONLine(w io.Writer, v any) {
	b, err := jsonMarshal(v)
	if err == nil {
		w.Write(append(b, '\n'))
	}
}
