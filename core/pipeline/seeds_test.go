package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/fuzzseed"
)

// TestFuzzSeeds keeps testdata/fuzz/FuzzLoad in step with these seeds (go
// test -run TestFuzzSeeds -update-seeds rewrites them): the inputs FuzzLoad
// adds in code, every example pipeline of the repository, and a few hostile
// ones (deep nesting, huge numbers, a sensitive variable, unknown blocks).
func TestFuzzSeeds(t *testing.T) {
	seeds := map[string]string{
		"files":     "source \"files\" \"s\" { path = \"x\" }\nsink \"files\" \"o\" {\n  input = source.s\n  path = \"y\"\n}\n",
		"variable":  "variable \"v\" {\n type = list(number)\n default = [1]\n validation {\n condition = length(var.v) > 0\n error_message = \"e\"\n }\n}\nlocals { a = var.v }\n",
		"cycle":     "transform \"pass\" \"a\" { input = transform.a }\n",
		"sensitive": "variable \"k\" {\n type = string\n sensitive = true\n default = \"s3cret\"\n}\nsource \"files\" \"s\" { path = var.k }\n",
		"nesting":   "locals { a = [[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]] }\n",
		"numbers":   "locals { a = 1e999999\n b = -0x1 \n c = 18446744073709551616 }\n",
		"unknown":   "mystery \"a\" \"b\" {\n x = 1\n}\nsluice {\n plugin \"p\" { sha256 = \"00\" }\n}\n",
	}
	// The examples join the corpus when it is rewritten; a new example
	// does not make this test fail.
	var matches []string
	if fuzzseed.Updating() {
		matches, _ = filepath.Glob(filepath.Join("..", "..", "pipelines", "*", "*.hcl"))
	}
	for _, p := range matches {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		seeds["example_"+filepath.Base(filepath.Dir(p))+"_"+filepath.Base(p)] = string(b)
	}
	var list []fuzzseed.Seed
	for name, s := range seeds {
		list = append(list, fuzzseed.Seed{Name: name, Values: []any{[]byte(s)}})
	}
	fuzzseed.Sync(t, "FuzzLoad", list)
}
