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

func tempOutput(t *testing.T, name string) *os.File {
	f, err := os.Create(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestWriteTurnsGoLowestOffsetFirst(t *testing.T) {
	turns, f := newTurnTable(), tempOutput(t, "out")
	release := turns.take(f, 1000)
	var mu sync.Mutex
	var order []int64
	var wg sync.WaitGroup
	for i, off := range []int64{3000, 2000, 50, 2500} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := turns.take(f, off)
			mu.Lock()
			order = append(order, off)
			mu.Unlock()
			time.Sleep(time.Millisecond) // a writer that holds its turn a while
			done()
		}()
		testwait.Until(t, fmt.Sprintf("writer %d waiting", i+1), func() bool { return waiters(turns, f) == i+1 })
	}
	release()
	wg.Wait()
	if want := []int64{50, 2000, 2500, 3000}; !slices.Equal(order, want) {
		t.Errorf("turns went to offsets %v, want %v", order, want)
	}
	if len(turns.files) != 0 {
		t.Errorf("%d files left in the table after every turn ended", len(turns.files))
	}
}

func TestWriteTurnsOfDifferentFilesRunAtOnce(t *testing.T) {
	turns := newTurnTable()
	a, b := tempOutput(t, "a"), tempOutput(t, "b")
	releaseA := turns.take(a, 0)
	got := make(chan func())
	go func() { got <- turns.take(b, 0) }()
	select {
	case releaseB := <-got:
		releaseB()
	case <-time.After(testwait.Timeout):
		t.Fatal("a write to another file waited for the turn of the first")
	}
	releaseA()
}

func TestWriteTurnsNeverOverlap(t *testing.T) {
	turns, f := newTurnTable(), tempOutput(t, "out")
	var inside, most int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				release := turns.take(f, int64(i*100+j))
				mu.Lock()
				inside++
				most = max(most, inside)
				mu.Unlock()
				runtime.Gosched() // room for a second writer, were it let in
				mu.Lock()
				inside--
				mu.Unlock()
				release()
			}
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d writers held one file's turn at once", most)
	}
}
