package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/internal/testwait"
)

func newTurnTable() *turnTable { return &turnTable{files: map[OutputFile][]turnWaiter{}} }

func waiters(t *turnTable, f OutputFile) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.files[f])
}

// turnHeld reports whether a write holds f's turn.
func turnHeld(t *turnTable, f OutputFile) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, busy := t.files[f]
	return busy
}

func tempOutput(t *testing.T, name string) *os.File {
	f, err := os.Create(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// gatedOutput is an output whose writes it records, by offset, and whose
// write at an offset with a gate waits until the gate is closed. It is not
// an *os.File: every write goes through its WriteAt.
type gatedOutput struct {
	*os.File
	during func(off int64) // called inside each write, if set

	mu      sync.Mutex
	gates   map[int64]chan struct{}
	offsets []int64
}

func newGatedOutput(t *testing.T) *gatedOutput {
	return &gatedOutput{File: tempOutput(t, "gated"), gates: map[int64]chan struct{}{}}
}

func (g *gatedOutput) WriteAt(p []byte, off int64) (int, error) {
	g.mu.Lock()
	gate := g.gates[off]
	g.offsets = append(g.offsets, off)
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if g.during != nil {
		g.during(off)
	}
	return g.File.WriteAt(p, off)
}

// written returns the offsets written, in order.
func (g *gatedOutput) written() []int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.offsets)
}

// holdTurn starts a write of one byte at off to g that holds g's turn in
// turns until the returned function is called; that function waits for the
// turn's end.
func holdTurn(t *testing.T, turns *turnTable, g *gatedOutput, off int64) (release func()) {
	gate := make(chan struct{})
	g.mu.Lock()
	g.gates[off] = gate
	g.mu.Unlock()
	done := make(chan struct{})
	go func() {
		turns.inTurn(g, &writeJob{off: off, n: 1, data: []byte{1}})
		close(done)
	}()
	testwait.Until(t, "the turn held", func() bool { return slices.Contains(g.written(), off) })
	return func() {
		close(gate)
		<-done
	}
}

// writeWaiting starts a write of one byte at each offset, one after the
// other waiting for g's turn in turns, and returns a function that waits
// for them.
func writeWaiting(t *testing.T, turns *turnTable, g OutputFile, offs ...int64) (wait func() []*writeJob) {
	jobs := make([]*writeJob, len(offs))
	var wg sync.WaitGroup
	before := waiters(turns, g)
	for i, off := range offs {
		jobs[i] = &writeJob{off: off, n: 1, data: []byte{byte(i)}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			turns.inTurn(g, jobs[i])
		}()
		testwait.Until(t, fmt.Sprintf("write %d waiting", i+1), func() bool { return waiters(turns, g) == before+i+1 })
	}
	return func() []*writeJob { wg.Wait(); return jobs }
}

func TestWriteTurnsGoLowestOffsetFirst(t *testing.T) {
	turns, g := newTurnTable(), newGatedOutput(t)
	release := holdTurn(t, turns, g, 1000)
	wait := writeWaiting(t, turns, g, 3000, 2000, 50, 2500)
	release()
	for _, j := range wait() {
		if !j.made || j.err != nil || j.written != 1 {
			t.Errorf("the write at %d: made %v, %d bytes, %v", j.off, j.made, j.written, j.err)
		}
	}
	if got, want := g.written(), []int64{1000, 50, 2000, 2500, 3000}; !slices.Equal(got, want) {
		t.Errorf("writes went to offsets %v, want %v", got, want)
	}
	if len(turns.files) != 0 {
		t.Errorf("%d files left in the table after every turn ended", len(turns.files))
	}
}

func TestWriteTurnsOfDifferentFilesRunAtOnce(t *testing.T) {
	turns := newTurnTable()
	a, b := newGatedOutput(t), newGatedOutput(t)
	release := holdTurn(t, turns, a, 0)
	defer release()
	done := make(chan struct{})
	go func() {
		turns.inTurn(b, &writeJob{off: 0, n: 1, data: []byte{1}})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(testwait.Timeout):
		t.Fatal("a write to another file waited for the turn of the first")
	}
}

func TestWriteTurnsNeverOverlap(t *testing.T) {
	turns, g := newTurnTable(), newGatedOutput(t)
	var inside, most int
	var mu sync.Mutex
	g.during = func(int64) {
		mu.Lock()
		inside++
		most = max(most, inside)
		mu.Unlock()
		runtime.Gosched() // room for a second writer, were it let in
		mu.Lock()
		inside--
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				turns.inTurn(g, &writeJob{off: int64(i*100 + j), n: 1, data: []byte{1}})
			}
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d writers held one file's turn at once", most)
	}
	if n := len(g.written()); n != 400 {
		t.Errorf("%d writes made, want 400", n)
	}
}

// The holder of a turn makes small writes waiting for it, and hands the
// turn to a write larger than what is left of servedBytes, which its own
// goroutine makes.
func TestWriteTurnsLeaveLargeWritesToTheirOwn(t *testing.T) {
	turns, g := newTurnTable(), newGatedOutput(t)
	release := holdTurn(t, turns, g, 0)
	wait := writeWaiting(t, turns, g, 10, 20)
	big := &writeJob{off: 30, n: servedBytes, data: make([]byte, servedBytes)}
	done := make(chan struct{})
	go func() {
		turns.inTurn(g, big)
		close(done)
	}()
	testwait.Until(t, "the large write waiting", func() bool { return waiters(turns, g) == 3 })
	release()
	<-done
	for _, j := range wait() {
		if !j.made {
			t.Errorf("the small write at %d was not made by the holder of the turn", j.off)
		}
	}
	if big.made || big.err != nil || big.written != servedBytes {
		t.Errorf("the large write: made by the holder %v, %d bytes, %v; want made by its own goroutine, whole", big.made, big.written, big.err)
	}
	if got, want := g.written(), []int64{0, 10, 20, 30}; !slices.Equal(got, want) {
		t.Errorf("writes went to offsets %v, want %v", got, want)
	}
}
