package apsim

import (
	"sort"
	"strconv"
	"strings"
)

// Node is one node of the parameter tree that tensor names spell: the name
// "layers.0.W" is the path layers → 0 → W. A node is a record (named
// children), a list (children named 0, 1, … n−1), a tensor (a leaf), or a
// tensor with children when both "a" and "a.b" name tensors.
type Node struct {
	// Key is the node's path component ("W", "0"); empty at the root.
	Key string
	// Tensor is the full name of the tensor at this node, or "".
	Tensor string
	// Children in order: list items by index, record fields in the order
	// their first tensor appears in the names.
	Children []*Node

	// index finds children by key once there are more than indexFrom of
	// them; fewer are scanned.
	index map[string]*Node
}

// indexFrom is the number of children from which a node indexes them.
const indexFrom = 8

// IsList reports whether the node's children are exactly 0, 1, … n−1.
func (n *Node) IsList() bool {
	if len(n.Children) == 0 {
		return false
	}
	for i, c := range n.Children {
		if c.Key != strconv.Itoa(i) {
			return false
		}
	}
	return true
}

// Child returns the child with the given key.
func (n *Node) Child(key string) *Node {
	if n.index != nil {
		return n.index[key]
	}
	for _, c := range n.Children {
		if c.Key == key {
			return c
		}
	}
	return nil
}

// add appends a child with the given key and returns it.
func (n *Node) add(key string) *Node {
	c := &Node{Key: key}
	n.Children = append(n.Children, c)
	switch {
	case n.index != nil:
		n.index[key] = c
	case len(n.Children) > indexFrom:
		n.index = make(map[string]*Node, 2*len(n.Children))
		for _, c := range n.Children {
			n.index[c.Key] = c
		}
	}
	return c
}

// Tree rebuilds the parameter tree from tensor names (parameter paths joined
// with dots). Children of a node whose keys are all non-negative integers are
// ordered by number; others keep the order in which names first mention
// them.
func Tree(names []string) *Node {
	root := &Node{}
	for _, name := range names {
		n := root
		for rest, more := name, true; more; {
			var part string
			part, rest, more = strings.Cut(rest, ".")
			c := n.Child(part)
			if c == nil {
				c = n.add(part)
			}
			n = c
		}
		n.Tensor = name
	}
	sortLists(root)
	return root
}

func sortLists(n *Node) {
	numeric := len(n.Children) > 0
	for _, c := range n.Children {
		if _, err := strconv.ParseUint(c.Key, 10, 63); err != nil || c.Key != strconv.Itoa(atoi(c.Key)) {
			numeric = false
		}
		sortLists(c)
	}
	if numeric {
		sort.SliceStable(n.Children, func(i, j int) bool { return atoi(n.Children[i].Key) < atoi(n.Children[j].Key) })
	}
}

func atoi(s string) int {
	i, _ := strconv.Atoi(s)
	return i
}

// Walk calls fn for every node below n, depth first, with the node's depth
// (1 for n's children); fn returning false skips the node's children.
func (n *Node) Walk(fn func(node *Node, depth int) bool) {
	var walk func(*Node, int)
	walk = func(x *Node, d int) {
		for _, c := range x.Children {
			if fn(c, d) {
				walk(c, d+1)
			}
		}
	}
	walk(n, 1)
}

// String renders the tree as indented lines, one per node, with tensors
// marked by their full names, for `sluice info --tree`.
func (n *Node) String() string {
	var b strings.Builder
	n.Walk(func(c *Node, d int) bool {
		b.WriteString(strings.Repeat("  ", d-1))
		b.WriteString(c.Key)
		switch {
		case c.IsList():
			b.WriteString(" [" + strconv.Itoa(len(c.Children)) + "]")
		case len(c.Children) > 0:
			b.WriteString(" {}")
		}
		if c.Tensor != "" {
			b.WriteString(" = " + c.Tensor)
		}
		b.WriteByte('\n')
		return true
	})
	return b.String()
}
