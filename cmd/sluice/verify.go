package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/plugins/apr"
	"github.com/sluice-ml/sluice/plugins/apsim"
	"github.com/sluice-ml/sluice/plugins/gguf"
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/detached"
	"github.com/sluice-ml/sluice/sdk/keyring"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// verifySchema names the version of verify's --json output.
const verifySchema = "sluice.verify/v1"

// Check statuses.
const (
	statusOK      = "ok"
	statusFailed  = "failed"
	statusWarning = "warning"
	statusSkipped = "skipped"
)

// keyFlags are the ways a command is given an HMAC key.
type keyFlags struct {
	key     string
	keyFile string
	userKey bool
}

func (k *keyFlags) add(cmd *cobra.Command, verb string) {
	f := cmd.Flags()
	f.StringVar(&k.key, "key", "", verb+" with this shared secret (HMAC-SHA256); never printed")
	f.StringVar(&k.keyFile, "key-file", "", verb+" with the shared secret held in this file (a trailing line break is ignored)")
	f.BoolVar(&k.userKey, "user-key", false, verb+" with your per-user key")
}

// count returns how many of the key flags were given.
func (k *keyFlags) count() int {
	n := 0
	for _, set := range []bool{k.key != "", k.keyFile != "", k.userKey} {
		if set {
			n++
		}
	}
	return n
}

// load returns the key to check signatures with, or nil when none was
// given.
func (k *keyFlags) load() (*keyring.Key, error) {
	n := k.count()
	switch {
	case n == 0:
		return nil, nil
	case n > 1:
		return nil, configErr(errors.New("give one of --key, --key-file and --user-key"))
	case k.key != "":
		return keyring.Shared(k.key)
	case k.keyFile != "":
		return readKeyFile(k.keyFile)
	}
	key, err := keyring.LoadUser()
	if err != nil {
		return nil, configErr(err)
	}
	return key, nil
}

// maxKeyFile bounds the size of a key file, as the sign transform does.
const maxKeyFile = 64 << 10

// readKeyFile reads a shared secret as the sign transform's key_file does:
// the file's bytes without a trailing line break. Its content never appears
// in errors.
func readKeyFile(path string) (*keyring.Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, configErr(fmt.Errorf("--key-file: %w", err))
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxKeyFile {
		return nil, configErr(fmt.Errorf("--key-file %s is not a regular file of at most %d bytes", path, maxKeyFile))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, configErr(fmt.Errorf("--key-file: %w", err))
	}
	secret := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if secret == "" {
		return nil, configErr(fmt.Errorf("--key-file %s is empty", path))
	}
	return keyring.Shared(secret)
}

func (a *app) verifyCommand() *cobra.Command {
	var kf keyFlags
	var strict, isolate bool
	cmd := &cobra.Command{
		Use:   "verify PATH",
		Short: "Check a checkpoint's integrity: digests, checksums, structure and signatures",
		Long: `verify checks everything a checkpoint's format lets it check, and exits 0
only when all of it holds (3 otherwise, naming what failed and where):

  apsim        the SHA-256 of every file and, with a key, the HMAC signature;
               the files of a set must belong together (digests in the index)
  APR          the header CRC and the footer checksum over the whole file
  GGUF         the structure: every tensor inside the file, contiguous, in
               order, aligned; the padding ggml needs after the last tensor;
               the shards of a split set
  safetensors  the structure: header, bounds, no overlaps or holes, shards
               against their index; alignment is reported as a warning

Besides, every file with a detached signature beside it (NAME.sig, written by
a sign stage for formats that cannot embed one) is checked with the key. When
a key is given, the checkpoint must be signed: embedded (apsim) or with a
detached signature for every data file. Without a key, signatures are
reported as present but not checked.

The key is read from --key, --key-file or your per-user key (--user-key) and
is never printed. --strict turns warnings into failures.`,
		Example: `  sluice verify model.apsim
  sluice verify model.apsim --key "team secret"
  sluice verify model.gguf --key-file /run/secrets/model-key
  sluice verify ./Llama-3-8B --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := kf.load()
			if err != nil {
				return err
			}
			h := a.inspectHost(isolate)
			defer h.Close()
			rep, err := verifyCheckpoint(cmd.Context(), h, args[0], key)
			if err != nil {
				return err
			}
			rep.finish(strict)
			if a.json {
				if err := writeJSON(a.stdout, rep); err != nil {
					return err
				}
			} else {
				rep.print(a.stdout, a.quiet)
			}
			if !rep.OK {
				return reported(exitBadInput, errors.New("verification failed"))
			}
			return nil
		},
	}
	kf.add(cmd, "check signatures")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings (such as unaligned safetensors data) as failures")
	cmd.Flags().BoolVar(&isolate, "isolate", false, "run format plugins as their own processes instead of inside sluice")
	return cmd
}

// verifyReport is the result of verify, schema sluice.verify/v1.
type verifyReport struct {
	Schema string        `json:"schema"`
	Path   string        `json:"path"`
	Read   string        `json:"read"`
	Format string        `json:"format"`
	OK     bool          `json:"ok"`
	Files  []string      `json:"files"`
	Checks []verifyCheck `json:"checks"`

	note string
}

// verifyCheck is one check and its outcome.
type verifyCheck struct {
	// Check names what was checked: structure, sha256, checksum, signature,
	// detached-signature, alignment, set.
	Check string `json:"check"`
	// File is the file concerned, if one.
	File string `json:"file,omitempty"`
	// Status is ok, failed, warning or skipped.
	Status string `json:"status"`
	// Detail says what was found, for people.
	Detail string `json:"detail"`
}

func (r *verifyReport) add(check, file, status, format string, args ...any) {
	r.Checks = append(r.Checks, verifyCheck{Check: check, File: file, Status: status, Detail: fmt.Sprintf(format, args...)})
}

// fail records a failed check from an error; the error's text names the file
// and offset at fault.
func (r *verifyReport) fail(check, file string, err error) {
	r.add(check, file, statusFailed, "%s", oneLine(err))
}

func (r *verifyReport) finish(strict bool) {
	r.OK = true
	for i, c := range r.Checks {
		if c.Status == statusWarning && strict {
			r.Checks[i].Status = statusFailed
		}
		if r.Checks[i].Status == statusFailed {
			r.OK = false
		}
	}
	if len(r.Checks) == 0 {
		r.OK = false
		r.add("structure", r.Read, statusFailed, "nothing could be checked")
	}
}

func (r *verifyReport) print(w io.Writer, quiet bool) {
	if !quiet {
		fmt.Fprintf(w, "%s: %s, %d file(s)\n", r.Path, r.Format, len(r.Files))
		if r.note != "" {
			fmt.Fprintf(w, "(%s)\n", r.note)
		}
	}
	counts := map[string]int{}
	for _, c := range r.Checks {
		counts[c.Status]++
		if quiet && c.Status != statusFailed {
			continue
		}
		where := ""
		if c.File != "" && !strings.HasPrefix(c.Detail, c.File) {
			where = displayPath(c.File) + ": "
		}
		fmt.Fprintf(w, "  %-7s %-18s %s%s\n", strings.ToUpper(c.Status), c.Check, where, c.Detail)
	}
	if quiet {
		return
	}
	var parts []string
	for _, s := range []string{statusOK, statusFailed, statusWarning, statusSkipped} {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, map[string]string{statusOK: "passed", statusFailed: "failed", statusWarning: "warning(s)", statusSkipped: "skipped"}[s]))
		}
	}
	if r.OK {
		fmt.Fprintf(w, "verified: %s\n", strings.Join(parts, ", "))
	} else {
		fmt.Fprintf(w, "FAILED: %s\n", strings.Join(parts, ", "))
	}
}

// verifyCheckpoint runs every check that applies to the checkpoint at arg.
// A returned error means verification could not run (a missing file, a bad
// key); failed checks are in the report.
func verifyCheckpoint(ctx context.Context, h *host.Host, arg string, key *keyring.Key) (*verifyReport, error) {
	path, note := resolveInput(arg)
	typ, err := detectSource(ctx, h, path)
	if err != nil {
		return nil, err
	}
	r := &verifyReport{Schema: verifySchema, Path: arg, Read: path, Format: typ, Files: []string{}, Checks: []verifyCheck{}, note: note}
	embedded := false
	switch typ {
	case "apsim":
		embedded = verifyApsim(ctx, r, path, key)
	case "gguf":
		verifyGGUF(r, path)
	case "apr":
		verifyAPR(r, path)
	case "safetensors":
		verifySafetensors(ctx, r, h, arg)
	default:
		verifyGeneric(ctx, r, h, arg)
	}
	verifyDetached(r, key, embedded, typ == "safetensors")
	return r, nil
}

// verifyApsim checks digests and the embedded signature; it reports whether
// the checkpoint carries an embedded signature that was checked or whose
// absence was reported.
func verifyApsim(ctx context.Context, r *verifyReport, path string, key *keyring.Key) bool {
	rep, err := apsim.Verify(ctx, path, key)
	if err != nil {
		switch {
		case errors.Is(err, apsim.ErrUnsigned), errors.Is(err, apsim.ErrSignature):
			// apsim checks every digest before the signature, so the digests
			// held; only the signature did not.
			r.Files = apsimFiles(path)
			r.add("sha256", "", statusOK, "every file's SHA-256 matches its recorded digest (checked before the signature)")
			r.fail("signature", "", err)
		case errors.Is(err, apsim.ErrDigest):
			r.fail("sha256", "", err)
		case errors.Is(err, apsim.ErrMixedShards):
			r.fail("set", "", err)
		default:
			r.fail("structure", "", err)
		}
		if len(r.Files) == 0 {
			r.Files = append(r.Files, path)
		}
		return key != nil
	}
	addApsimFiles(r, rep)
	switch {
	case rep.SignatureChecked:
		r.add("signature", rep.Index, statusOK, "HMAC-SHA256 over every file digest and the metadata matches the %s", rep.KeyID)
	case rep.Signed:
		r.add("signature", rep.Index, statusSkipped, "signed with the %s; give --key, --key-file or --user-key to check the signature", rep.KeyID)
	}
	return rep.Signed || key != nil
}

func addApsimFiles(r *verifyReport, rep *apsim.Report) {
	if rep.Index != "" {
		r.Files = append(r.Files, rep.Index)
		r.add("set", rep.Index, statusOK, "%d shard(s) belong together: the index records every shard's SHA-256 and weight map", len(rep.Files))
	}
	for _, f := range rep.Files {
		r.Files = append(r.Files, f.Path)
		r.add("sha256", f.Path, statusOK, "%s matches the recorded digest", f.SHA256)
	}
}

// verifyGGUF checks the structure of a GGUF file or split set.
func verifyGGUF(r *verifyReport, path string) {
	set, err := gguf.OpenSet(path)
	if err != nil {
		r.Files = append(r.Files, path)
		r.fail("structure", path, err)
		return
	}
	defer set.Close()
	if len(set.Files) > 1 {
		r.add("set", path, statusOK, "%d shards of a split set, named and numbered consistently, no tensor twice", len(set.Files))
	}
	for i, f := range set.Files {
		p := set.Paths[i]
		r.Files = append(r.Files, p)
		if err := f.CheckPadding(); err != nil {
			r.fail("structure", p, err)
			continue
		}
		r.add("structure", p, statusOK, "GGUF v%d, %d tensors inside the file, contiguous and in order, each aligned to %d bytes from offset %d", f.Version, len(f.Tensors), f.Alignment, f.DataOffset)
		var long []string
		for _, t := range f.Tensors {
			if len(t.Name) > gguf.MaxNameLen {
				long = append(long, t.Name)
			}
		}
		if len(long) > 0 {
			r.add("names", p, statusWarning, "%d tensor name(s) longer than ggml's %d bytes (llama.cpp refuses them), e.g. %q", len(long), gguf.MaxNameLen, long[0])
		}
		if n := len(f.Tensors); n > 0 {
			last := &f.Tensors[n-1]
			end := f.AbsOffset(last) + (last.Size+f.Alignment-1)/f.Alignment*f.Alignment
			if extra := uint64(f.Size) - end; uint64(f.Size) > end {
				r.add("structure", p, statusWarning, "%d bytes after the padding of the last tensor (offset %d) belong to no tensor", extra, end)
			}
		}
	}
}

// verifyAPR checks the CRCs of an APR file, or of every shard of a set.
func verifyAPR(r *verifyReport, path string) {
	paths := []string{path}
	if m := shardName.FindStringSubmatch(filepath.Base(path)); m != nil && m[4] == ".apr" {
		all, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(m[1])+"-*-of-"+m[3]+m[4]))
		sort.Strings(all)
		if len(all) > 1 {
			paths = all
		}
	}
	for _, p := range paths {
		r.Files = append(r.Files, p)
		rd, err := apr.OpenFile(p, apr.ReadOptions{})
		if err != nil {
			check := "structure"
			if errors.Is(err, apr.ErrChecksum) {
				check = "checksum"
			}
			r.fail(check, p, err)
			continue
		}
		what := "the header CRC32 and the footer CRC32 over the whole file match"
		if rd.Layout == apr.LayoutSpec {
			what = "the footer CRC-64 over the whole file and the recorded size match"
		}
		r.add("checksum", p, statusOK, "APR %s layout v%s, %d tensors: %s", rd.Layout, rd.Version, len(rd.Tensors), what)
		rd.Close()
	}
}

// verifySafetensors checks a file, an index or a directory: the plugin's
// reading (every shard's header, the index against the shards), then
// alignment and the index's total size.
func verifySafetensors(ctx context.Context, r *verifyReport, h *host.Host, arg string) {
	c, err := openCheckpoint(ctx, h, arg)
	if err != nil {
		r.Files = append(r.Files, r.Read)
		r.fail("structure", "", err)
		return
	}
	defer c.Close()
	files := dataFiles(c.Manifest)
	index := ""
	if fi, err := os.Stat(c.Path); err == nil && fi.Mode().IsRegular() && strings.HasSuffix(c.Path, ".index.json") {
		index = c.Path
	} else if err == nil && fi.IsDir() {
		if p := filepath.Join(c.Path, "model.safetensors.index.json"); fileExists(p) {
			index = p
		}
	}
	if index != "" {
		r.Files = append(r.Files, index)
		r.add("set", index, statusOK, "%d shard(s) hold exactly the tensors the weight map places in them", len(files))
		checkIndexTotal(r, index, c.Manifest)
	}
	for _, p := range files {
		r.Files = append(r.Files, p)
		h, err := readSafetensorsHeader(p)
		if err != nil {
			r.fail("structure", p, err)
			continue
		}
		r.add("structure", p, statusOK, "%d tensors inside the file, contiguous from offset %d, no overlaps or holes", len(h.Tensors), h.DataOffset)
		var bad []string
		if h.DataOffset%8 != 0 {
			r.add("alignment", p, statusWarning, "tensor data starts at offset %d, not a multiple of 8 (the safetensors serializer pads the header to 8)", h.DataOffset)
		}
		for _, e := range h.Tensors {
			info, ok := e.DType.Info()
			if !ok || info.BlockSize != 1 || info.BlockBytes == 0 {
				continue
			}
			if (uint64(h.DataOffset)+e.Begin)%info.BlockBytes != 0 {
				bad = append(bad, e.Name)
			}
		}
		if len(bad) > 0 {
			r.add("alignment", p, statusWarning, "%d tensor(s) not aligned to their element size (readers must copy them instead of mapping), e.g. %q", len(bad), bad[0])
		}
	}
}

// checkIndexTotal compares an index's metadata.total_size with the bytes of
// its tensors.
func checkIndexTotal(r *verifyReport, index string, m *tensor.Manifest) {
	b, err := os.ReadFile(index)
	if err != nil {
		return
	}
	var ix struct {
		Metadata struct {
			TotalSize *float64 `json:"total_size"`
		} `json:"metadata"`
	}
	if json.Unmarshal(b, &ix) != nil || ix.Metadata.TotalSize == nil {
		return
	}
	if uint64(*ix.Metadata.TotalSize) != m.TotalSize() {
		r.add("set", index, statusWarning, "metadata.total_size is %d but the shards hold %d bytes of tensors", uint64(*ix.Metadata.TotalSize), m.TotalSize())
	}
}

func readSafetensorsHeader(p string) (*st.Header, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return st.ReadHeader(f, fi.Size(), p)
}

// verifyGeneric checks what any source can: that it reads the checkpoint.
func verifyGeneric(ctx context.Context, r *verifyReport, h *host.Host, arg string) {
	c, err := openCheckpoint(ctx, h, arg)
	if err != nil {
		r.Files = append(r.Files, r.Read)
		r.fail("structure", "", err)
		return
	}
	defer c.Close()
	files := dataFiles(c.Manifest)
	if len(files) == 0 {
		files = []string{c.Path}
	}
	r.Files = append(r.Files, files...)
	r.add("structure", c.Path, statusOK, "the %s reader accepts it: %d tensors, %s (the format records no digests or checksums)", c.Format, len(c.Manifest.Tensors), bytesize.Human(c.Manifest.TotalSize()))
}

// dataFiles lists the files the manifest's tensors lie in, in order of
// first use.
func dataFiles(m *tensor.Manifest) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range m.Tensors {
		if t.Location != nil && !seen[t.Location.Path] {
			seen[t.Location.Path] = true
			out = append(out, t.Location.Path)
		}
	}
	return out
}

// verifyDetached checks detached signatures (NAME.sig) beside the
// checkpoint's files and, when sideFiles, the Hugging Face side files
// (config.json, tokenizer files) beside them. With a key
// and no embedded signature, every file of the checkpoint must have one.
func verifyDetached(r *verifyReport, key *keyring.Key, embedded, sideFiles bool) {
	var files []string
	seen := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range r.Files {
		if a := absPath(f); !seen[a] {
			seen[a] = true
			files = append(files, f)
			dirs[filepath.Dir(a)] = true
		}
	}
	var side []string
	for d := range dirs {
		if !sideFiles {
			break
		}
		for name := range tensor.HFFiles {
			p := filepath.Join(d, name)
			if !seen[p] {
				side = append(side, p)
				seen[p] = true
			}
		}
	}
	sort.Strings(side)
	signed := 0
	check := func(f string, required bool) {
		sigPath := detached.Path(f)
		if _, err := os.Stat(sigPath); err != nil {
			if required {
				r.add("detached-signature", f, statusFailed, "a key was given, but %s has no signature (no %s, and the format embeds none)", filepath.Base(f), filepath.Base(sigPath))
			}
			return
		}
		signed++
		if key == nil {
			if _, err := detached.Read(sigPath); err != nil {
				r.fail("detached-signature", f, err)
				return
			}
			r.add("detached-signature", f, statusSkipped, "%s is present; give --key, --key-file or --user-key to check it", filepath.Base(sigPath))
			return
		}
		sig, err := detached.Verify(f, key.Bytes())
		if err != nil {
			r.fail("detached-signature", f, err)
			return
		}
		r.add("detached-signature", f, statusOK, "%s matches: HMAC-SHA256 of the file's SHA-256 (%.16s…) and size (%d bytes)", filepath.Base(sigPath), sig.SHA256, sig.Size)
	}
	for _, f := range files {
		check(f, key != nil && !embedded)
	}
	for _, f := range side {
		if _, err := os.Stat(f); err != nil {
			continue
		}
		if _, err := os.Stat(detached.Path(f)); err != nil {
			if key != nil && signed > 0 {
				r.add("detached-signature", f, statusWarning, "%s lies beside the signed files but is not signed", filepath.Base(f))
			}
			continue
		}
		check(f, false)
	}
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// displayPath shortens an absolute path under the working directory to a
// relative one, for people.
func displayPath(p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	cwd, err := os.Getwd()
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(cwd, p); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return p
}

// apsimFiles lists the files of an apsim checkpoint from its names and
// index alone: the index and its shards, or the single file.
func apsimFiles(path string) []string {
	index := path
	if m := shardName.FindStringSubmatch(filepath.Base(path)); m != nil && m[4] == apsim.Extension {
		index = filepath.Join(filepath.Dir(path), m[1]+apsim.IndexSuffix)
	}
	if !strings.HasSuffix(index, apsim.IndexSuffix) {
		return []string{path}
	}
	b, err := os.ReadFile(index)
	var ix struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err != nil || json.Unmarshal(b, &ix) != nil {
		return []string{index}
	}
	seen := map[string]bool{}
	var shards []string
	for _, f := range ix.WeightMap {
		if !seen[f] {
			seen[f] = true
			shards = append(shards, filepath.Join(filepath.Dir(index), f))
		}
	}
	sort.Strings(shards)
	return append([]string{index}, shards...)
}
