package transform

import (
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/keyring"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	Register("sign", Factory{
		Doc: "Signs the outputs of the sinks downstream with an HMAC-SHA256 key: key (a shared secret), key_file " +
			"(a file holding one), or user_key = true (the per-user key, created on first use). Sinks that embed " +
			"signatures (apsim) get the key; for every other sink the core writes NAME.sig beside each file it " +
			"commits. The key never appears in plans, logs or errors.",
		Spec: hcldec.ObjectSpec{
			"key":      &hcldec.AttrSpec{Name: "key", Type: cty.String},
			"key_file": &hcldec.AttrSpec{Name: "key_file", Type: cty.String},
			"user_key": &hcldec.AttrSpec{Name: "user_key", Type: cty.Bool},
		},
		Sensitive: []string{"key"},
		New:       newSign,
	})
}

// maxKeyFile bounds the size of a key file.
const maxKeyFile = 64 << 10

type sign struct {
	key  *keyring.Key
	from string // what the plan says about the key's origin
}

func newSign(cfg cty.Value) (Transform, error) {
	a := newAttrs(cfg)
	n := 0
	for _, k := range []string{"key", "key_file", "user_key"} {
		if a.has(k) && !(k == "user_key" && !a.boolean(k)) {
			n++
		}
	}
	if n != 1 {
		return nil, plugin.ConfigErrorf("", "give exactly one of key, key_file or user_key = true")
	}
	s := &sign{}
	switch {
	case a.has("key"):
		k, err := keyring.Shared(a.str("key"))
		if err != nil {
			return nil, plugin.ConfigErrorf("key", "%v", err)
		}
		s.key, s.from = k, "the key attribute"
	case a.has("key_file"):
		path := a.str("key_file")
		k, err := readKeyFile(path)
		if err != nil {
			return nil, plugin.ConfigErrorf("key_file", "%v", err)
		}
		s.key, s.from = k, "key file "+path
	default:
		k, err := keyring.User()
		if err != nil {
			return nil, plugin.ConfigErrorf("user_key", "%v", err)
		}
		path, _ := keyring.UserKeyPath()
		s.key, s.from = k, "the per-user key "+path
	}
	return s, nil
}

// readKeyFile reads a shared secret from a file: its bytes without a
// trailing line break, exactly as if given as key. The file's content never
// appears in errors.
func readKeyFile(path string) (*keyring.Key, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("the key file %s is not a regular file", path)
	}
	if st.Size() > maxKeyFile {
		return nil, fmt.Errorf("the key file %s has %d bytes; a key file holds at most %d", path, st.Size(), maxKeyFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the key file: %w", err)
	}
	secret := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	k, err := keyring.Shared(secret)
	if err != nil {
		return nil, fmt.Errorf("the key file %s is empty", path)
	}
	return k, nil
}

func (s *sign) Plan(in *tensor.Manifest) (*Plan, error) {
	p := Identity(in)
	p.SigningKey = s.key.Bytes()
	p.SigningKeyID = s.key.ID()
	p.Decisions = []plugin.Decision{{Msg: fmt.Sprintf("outputs downstream are signed with HMAC-SHA256 (%s, from %s): embedded by sinks that support it, else NAME.sig beside each file", s.key.ID(), s.from)}}
	return p, nil
}
