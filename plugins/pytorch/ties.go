package pytorch

import "sort"

// tieCandidate is what Hugging Face's duplicate detection looks at for one
// tensor: which storage it views, the byte range it covers there, and
// whether it covers the whole storage.
type tieCandidate struct {
	name     string
	storage  string // identity of the storage (file and key)
	nbytes   uint64 // size of the storage
	start    uint64 // byte offset of the first element in the storage
	stop     uint64 // byte just past the last element (start when empty)
	complete bool   // starts at 0 and has exactly the storage's bytes
}

// hfTies decides which tensors Hugging Face's pickle-to-safetensors
// conversion (safetensors' convert.py, _remove_duplicate_names over
// safetensors.torch._find_shared_tensors) removes as duplicates, and which
// tensor each is kept as. It returns removed name → kept name, and the
// groups that conversion refuses (overlapping views none of which covers
// its whole storage); those are not tied.
//
// The rules, reproduced exactly:
//   - tensors are grouped by storage; empty storages are never shared;
//   - within a storage, tensors sorted by (start, stop, name) form one group
//     while each starts before the previous one's stop, and a new group
//     otherwise (the previous stop is the last tensor's, not the maximum);
//   - a group keeps its lexicographically smallest complete name, preferring
//     names not in discard (transformers' _tied_weights_keys);
//   - a group of one that is not complete is kept (copied out contiguous).
func hfTies(ts []tieCandidate, discard map[string]bool) (tied map[string]string, refused [][]string) {
	byStorage := map[string][]tieCandidate{}
	var order []string
	for _, t := range ts {
		if t.nbytes == 0 {
			continue
		}
		if _, ok := byStorage[t.storage]; !ok {
			order = append(order, t.storage)
		}
		byStorage[t.storage] = append(byStorage[t.storage], t)
	}
	tied = map[string]string{}
	for _, key := range order {
		areas := byStorage[key]
		if len(areas) < 2 {
			continue
		}
		sort.Slice(areas, func(i, j int) bool {
			a, b := areas[i], areas[j]
			if a.start != b.start {
				return a.start < b.start
			}
			if a.stop != b.stop {
				return a.stop < b.stop
			}
			return a.name < b.name
		})
		var groups [][]tieCandidate
		groups = append(groups, []tieCandidate{areas[0]})
		lastStop := areas[0].stop
		for _, a := range areas[1:] {
			if a.start >= lastStop {
				groups = append(groups, []tieCandidate{a})
			} else {
				groups[len(groups)-1] = append(groups[len(groups)-1], a)
			}
			lastStop = a.stop
		}
		for _, g := range groups {
			if len(g) < 2 {
				continue
			}
			keep, keepPreferred := "", ""
			for _, t := range g {
				if !t.complete {
					continue
				}
				if keep == "" || t.name < keep {
					keep = t.name
				}
				if !discard[t.name] && (keepPreferred == "" || t.name < keepPreferred) {
					keepPreferred = t.name
				}
			}
			if keep == "" {
				names := make([]string, len(g))
				for i, t := range g {
					names[i] = t.name
				}
				sort.Strings(names)
				refused = append(refused, names)
				continue
			}
			if keepPreferred != "" {
				keep = keepPreferred
			}
			for _, t := range g {
				if t.name != keep {
					tied[t.name] = keep
				}
			}
		}
	}
	return tied, refused
}
