package apsim

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestCrashHelper is the child process of the kill -9 tests: it saves a
// checkpoint and, at the point named in APSIM_CRASH_POINT, says so and
// waits to be killed.
func TestCrashHelper(t *testing.T) {
	path := os.Getenv("APSIM_CRASH_PATH")
	if path == "" {
		t.Skip("runs only as the child of the kill -9 tests")
	}
	point := os.Getenv("APSIM_CRASH_POINT")
	crashPoint = func(p string) {
		if p == point {
			fmt.Println("REACHED " + p)
			os.Stdout.Sync()
			select {}
		}
	}
	c := sampleCheckpoint(t, 61)
	if os.Getenv("APSIM_CRASH_BIG") != "" {
		const n = 8 << 20 // 32 MiB of f32, quick to make
		c.m.Tensors = append(c.m.Tensors, tensor.TensorInfo{Name: "big", DType: tensor.F32, Shape: []uint64{n}, Size: 4 * n})
		c.data["big"] = make([]byte, 4*n)
	}
	fmt.Println("SAVING")
	os.Stdout.Sync()
	mustSave(t, SinkConfig{Path: path, Shard: os.Getenv("APSIM_CRASH_SHARD")}, c)
	fmt.Println("SAVED")
}

// runChild starts the helper and returns once it printed want (then kills
// it with SIGKILL) or, when want is "", after delay.
func runChild(t *testing.T, env []string, want string, delay time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(60 * time.Second)
	if want == "" {
		want = "SAVING"
	}
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("child ended before printing %q", want)
			}
			if strings.HasPrefix(l, want) {
				break wait
			}
		case <-deadline:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child did not reach %q", want)
		}
	}
	if want == "SAVING" {
		time.Sleep(delay)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go func() {
		for range lines {
		}
	}()
	cmd.Wait()
}

func TestKillDuringSaveLeavesNoFile(t *testing.T) {
	for _, sharded := range []bool{false, true} {
		points := []string{"begun", "wrote mass", "writes done", "hashed", "headers written"}
		shard := ""
		if sharded {
			points = append(points, "renamed 1")
			shard = "300B"
		}
		for _, point := range points {
			dir := t.TempDir()
			path := filepath.Join(dir, "model.apsim")
			runChild(t, []string{"APSIM_CRASH_PATH=" + path, "APSIM_CRASH_POINT=" + point, "APSIM_CRASH_SHARD=" + shard}, "REACHED "+point, 0)
			entries, _ := os.ReadDir(dir)
			var final []string
			for _, e := range entries {
				if !atomicfile.IsTemp(e.Name()) {
					final = append(final, e.Name())
				}
			}
			switch {
			case !sharded && len(final) > 0:
				t.Errorf("killed at %q: %v exist under their real names", point, final)
			case sharded && point != "renamed 1" && len(final) > 0:
				t.Errorf("sharded, killed at %q: %v exist under their real names", point, final)
			case sharded && point == "renamed 1":
				// Shards are renamed one by one and the index last: the
				// set cannot be loaded, from its index or from a shard.
				if len(final) != 1 || strings.HasSuffix(final[0], IndexSuffix) {
					t.Errorf("killed after the first rename: %v", final)
				}
				if _, err := loadAll(t, SourceConfig{Path: filepath.Join(dir, final[0])}); err == nil {
					t.Error("an incomplete set loads from its first shard")
				}
			}
			if len(entries) == len(final) && point != "begun" {
				t.Errorf("killed at %q: no temporary file, so the kill came too late", point)
			}
			// The next save succeeds and clears the dead process's temporary files.
			mustSave(t, SinkConfig{Path: path, Shard: shard}, sampleCheckpoint(t, 62))
			entries, _ = os.ReadDir(dir)
			for _, e := range entries {
				if atomicfile.IsTemp(e.Name()) {
					t.Errorf("after a new save, temporary file %s remains", e.Name())
				}
			}
		}
	}
}

// TestKillAtRandomTimes kills a larger save after various delays: the real
// name then holds either nothing or the complete, valid checkpoint.
func TestKillAtRandomTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, delay := range []time.Duration{0, 5 * time.Millisecond, 15 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond, 300 * time.Millisecond, 800 * time.Millisecond} {
		dir := t.TempDir()
		path := filepath.Join(dir, "model.apsim")
		runChild(t, []string{"APSIM_CRASH_PATH=" + path, "APSIM_CRASH_BIG=1"}, "", delay)
		if _, err := os.Stat(path); err == nil {
			if _, err := loadAll(t, SourceConfig{Path: path}); err != nil {
				t.Errorf("killed after %v: the file under the real name does not load: %v", delay, err)
			}
			t.Logf("killed after %v: the save had completed", delay)
		} else {
			t.Logf("killed after %v: nothing under the real name", delay)
		}
	}
}
