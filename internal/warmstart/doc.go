// Package warmstart makes the executable's code and read-only data resident
// as the process starts, in a system call per run of cached pages, instead of
// a page fault for each run of pages the start-up first touches.
//
// A Go program of tens of megabytes touches pages all over its code and
// read-only data while the runtime and a few hundred packages initialise:
// about a thousand faults for sluice's binary, each of which traps to the
// hypervisor on a virtual machine. Mapping at once the pages the page cache
// already holds (mincore, then madvise MADV_POPULATE_READ, Linux 5.14) costs
// about a millisecond, and a command starts about 3 ms sooner; a run starts its
// plugin processes from the same binary and each gains as much. Pages the
// cache does not hold (a first start, a cache under pressure) are left to fault
// in: populating them would read from the disk what start-up may never need.
// The mapped pages count in the process's resident set (about 8 MiB more for
// sluice): they are the page cache's, shared by every process of the binary,
// and free to drop.
//
// It also makes 8 MiB of the Go heap resident, from its newest object up (as
// far as the heap's mapping goes): the runtime gives out heap memory from the
// lowest free address, so those are the pages start-up allocates next, and a
// plugin process faulted on 420 of them, one trap each, before it served its
// first call. They are fresh memory, the process's own.
//
// It runs in the package's init, which runs early because the package needs
// only a few low-level standard packages (os, bytes, strconv, syscall): Go
// initialises packages in the order of their import paths among those whose
// imports are ready, and sluice's is among the first thirty of 230, before
// protobuf, gRPC, encoding/gob and the rest. Anywhere the calls are missing
// (another system, an older kernel, no /proc) nothing happens.
package warmstart
