package plugin

import (
	"context"
	"os"
	"testing"

	"github.com/sluice-ml/sluice/internal/pagecache"
	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// An output's early syncs drop the pages they made durable from the page
// cache, both in a file the host writes into over a direct lane and in one
// the sink writes itself; a sink begun with KeepCache (protocol 1.10) keeps
// every page of both.
func TestKeepCacheKeepsTheOutputsPages(t *testing.T) {
	pagecache.SkipUnlessDropping(t, t.TempDir())
	// One tensor a file: the host writes "big" into out0.bin, the sink
	// "permuted" into out1.bin. Each reaches past the first early sync.
	const size = atomicfile.EarlySyncStep + atomicfile.WritebackStep
	sizes := map[string]int{"big": size, "permuted": size}
	names := []string{"big", "permuted"}
	pages := int(atomicfile.EarlySyncStep / int64(os.Getpagesize()))
	for _, keep := range []bool{false, true} {
		ds := newDirectSink(t.TempDir(), sizes, names)
		sk, _, _ := laneSink(t, ds)
		ctx := context.Background()
		if err := sk.Begin(ctx, &tensor.Manifest{}, BeginOptions{KeepCache: keep}); err != nil {
			t.Fatal(err)
		}
		data := map[string]TensorData{}
		for _, n := range names {
			data[n] = BytesData(contentOf(n, size))
		}
		if err := writeAll(ctx, sk, data); err != nil {
			t.Fatal(err)
		}
		arts, err := sk.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range arts {
			writer := map[int]string{0: "the host", 1: "the sink"}[i]
			resident, err := pagecache.ResidentPath(a.Path, atomicfile.EarlySyncStep)
			if err != nil {
				t.Fatal(err)
			}
			// A guest running DAMON's pageout evicts pages it finds
			// cold of its own accord, more the longer the test takes (up
			// to 512 of 16,384 under the race detector): three quarters
			// must stay, where a dropped stretch keeps none.
			switch {
			case keep && resident < pages*3/4:
				t.Errorf("KeepCache: %d of the %d pages %s synced early in %s are cached, want nearly all", resident, pages, writer, a.Path)
			case !keep && resident != 0:
				t.Errorf("%d of the %d pages %s synced early in %s are still cached, want them dropped", resident, pages, writer, a.Path)
			}
		}
	}
}
