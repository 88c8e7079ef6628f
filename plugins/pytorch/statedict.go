package pytorch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/plugins/pytorch/pickle"
)

// namedTensor is one tensor of a state dict, by its dotted name.
type namedTensor struct {
	name string
	ref  *tensorRef
}

// Limits on walking the unpickled object: nested dicts may share children
// (or contain themselves), so the walk is bounded in depth and in visits.
const (
	maxWalkDepth  = 64
	maxWalkVisits = 1 << 19
)

func hasTensor(d *pickle.Dict) bool {
	for _, v := range d.Values() {
		if _, ok := v.(*tensorRef); ok {
			return true
		}
	}
	return false
}

// selectStateDict picks the state dict inside the unpickled root: the entry
// named key when one is configured; otherwise root["state_dict"] as Hugging
// Face's conversion does, then root["model"] when the root holds no tensor
// itself, then the root.
func selectStateDict(root pickle.Value, key string) (*pickle.Dict, string, error) {
	d, ok := root.(*pickle.Dict)
	if !ok {
		return nil, "", fmt.Errorf("the checkpoint holds a %s, not a dict of tensors (a state dict)", pickle.TypeName(root))
	}
	if key != "" {
		v, ok := d.Get(key)
		if !ok {
			return nil, "", fmt.Errorf("the checkpoint has no entry %q (it has %s)", key, describeKeys(d))
		}
		sd, ok := v.(*pickle.Dict)
		if !ok {
			return nil, "", fmt.Errorf("entry %q is a %s, not a state dict", key, pickle.TypeName(v))
		}
		return sd, key, nil
	}
	if v, ok := d.Get("state_dict"); ok {
		if sd, ok := v.(*pickle.Dict); ok {
			return sd, "state_dict", nil
		}
	}
	// {"model": state_dict, "optimizer": …, "epoch": …}; a state dict that
	// merely has a sub-dict called "model" next to tensors is left whole.
	if v, ok := d.Get("model"); ok {
		if sd, ok := v.(*pickle.Dict); ok && !hasTensor(d) {
			return sd, "model", nil
		}
	}
	return d, "", nil
}

func describeKeys(d *pickle.Dict) string {
	var parts []string
	for i, k := range d.Keys() {
		if i == 20 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%v", k))
	}
	if len(parts) == 0 {
		return "no entries"
	}
	return "entries " + strings.Join(parts, ", ")
}

// flatten lists the tensors of a state dict in insertion order. Nested dicts
// (a dict of state dicts) contribute their tensors under dotted names;
// values that are not tensors (epoch counters, hyperparameters) are left out.
func flatten(d *pickle.Dict) ([]namedTensor, error) {
	// Count first, sharing counts between paths, so a pickle whose nested
	// dicts share children is refused before any name is built.
	c := &counter{memo: map[*pickle.Dict]uint64{}, onPath: map[*pickle.Dict]bool{}}
	n, err := c.count(d, "", 0)
	if err != nil {
		return nil, err
	}
	if n > maxWalkVisits {
		return nil, fmt.Errorf("state dict has more than %d entries (nested dicts shared between entries?)", maxWalkVisits)
	}
	w := &walker{seen: map[string]bool{}, onPath: map[*pickle.Dict]bool{}}
	if err := w.walk(d, "", 0); err != nil {
		return nil, err
	}
	return w.out, nil
}

type walker struct {
	out    []namedTensor
	seen   map[string]bool
	onPath map[*pickle.Dict]bool
	visits int
}

func (w *walker) walk(d *pickle.Dict, prefix string, depth int) error {
	if depth > maxWalkDepth {
		return fmt.Errorf("state dict nests deeper than %d dicts at %q", maxWalkDepth, prefix)
	}
	if w.onPath[d] {
		return fmt.Errorf("state dict contains itself at %q", prefix)
	}
	w.onPath[d] = true
	defer delete(w.onPath, d)
	vals := d.Values()
	for i, k := range d.Keys() {
		w.visits++
		if w.visits > maxWalkVisits {
			return fmt.Errorf("state dict has more than %d entries (shared nested dicts?)", maxWalkVisits)
		}
		var name string
		switch k := k.(type) {
		case string:
			name = k
		case int64:
			name = strconv.FormatInt(k, 10)
		default:
			continue
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		switch v := vals[i].(type) {
		case *tensorRef:
			if name == "" {
				return fmt.Errorf("a tensor has an empty name")
			}
			if w.seen[name] {
				return fmt.Errorf("two tensors are named %q once nested names are joined with dots", name)
			}
			w.seen[name] = true
			w.out = append(w.out, namedTensor{name: name, ref: v})
		case *pickle.Dict:
			if err := w.walk(v, name, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// counter counts the entries a walk would visit, with memoized counts per
// dict, so shared children cost one visit each.
type counter struct {
	memo   map[*pickle.Dict]uint64
	onPath map[*pickle.Dict]bool
}

func (c *counter) count(d *pickle.Dict, prefix string, depth int) (uint64, error) {
	if depth > maxWalkDepth {
		return 0, fmt.Errorf("state dict nests deeper than %d dicts at %q", maxWalkDepth, prefix)
	}
	if n, ok := c.memo[d]; ok {
		return n, nil
	}
	if c.onPath[d] {
		return 0, fmt.Errorf("state dict contains itself at %q", prefix)
	}
	c.onPath[d] = true
	defer delete(c.onPath, d)
	n := uint64(d.Len())
	for i, v := range d.Values() {
		sub, ok := v.(*pickle.Dict)
		if !ok {
			continue
		}
		name := fmt.Sprint(d.Keys()[i])
		if prefix != "" {
			name = prefix + "." + name
		}
		k, err := c.count(sub, name, depth+1)
		if err != nil {
			return 0, err
		}
		n += k
		if n > maxWalkVisits {
			n = maxWalkVisits + 1 // saturate
		}
	}
	c.memo[d] = n
	return n, nil
}
