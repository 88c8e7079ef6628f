// Package hugeheap backs the next part of the Go heap with transparent huge
// pages, for a process that is about to allocate tens of megabytes.
//
// On a virtual machine every page fault traps to the hypervisor: on the
// machines Sluice is benchmarked on, a fresh 4 KiB page costs about 13 µs the
// first time it is touched, a 2 MiB huge page about 6 µs per 4 KiB of it. A
// conversion of a checkpoint of 20,000 tensors grows the heaps of sluice and
// of its plugin processes by 30-40 MiB each (manifests, plans, trees, the
// messages between them), thousands of faults in all.
//
// Linux gives huge pages to memory that asks for them (MADV_HUGEPAGE) where
// the system's setting is "madvise", the default of most distributions. The
// Go runtime does not ask for its heap, and maps the heap in pieces of a few
// megabytes as it grows, each a mapping of its own that the advice given to
// the others does not cover. Reserve makes the runtime map the next part of
// the heap at once, by allocating one large object it drops at once, advises
// huge pages on it, and leaves it free for what the process allocates next:
// the runtime hands out the lowest free addresses first.
//
// It is for processes that will allocate that much: a command that reads a
// header and exits would pay for huge pages it never fills, and for the
// collection that frees the reserve. Where the system's setting is "always"
// the advice changes nothing, where it is "never" it is ignored, and off
// Linux Reserve does nothing.
package hugeheap
