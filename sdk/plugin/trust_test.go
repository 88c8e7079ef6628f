package plugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
)

// servingCmd starts this test binary as the gen plugin (see TestMain in
// dataplane_test.go), which writes markFile when it starts.
func servingCmd(markFile string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SLUICE_SDK_TEST_SERVE=1", markEnv+"="+markFile)
	return cmd
}

// TestConnectionsNeedTheHostCertificate proves the plugin's socket speaks
// mutual TLS only with its host, with go-plugin's AutoMTLS (third-party
// plugins) and with the certificates the host issues (HostTLS, built-ins):
// it refuses a plaintext connection, a TLS connection without a client
// certificate and one with a certificate the host did not make, while the
// host's own connection works.
func TestConnectionsNeedTheHostCertificate(t *testing.T) {
	for _, hostTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "AutoMTLS", true: "HostTLS"}[hostTLS], func(t *testing.T) {
			c, err := Launch(LaunchConfig{Cmd: servingCmd(""), Label: "plugin gen", StartTimeout: 30 * time.Second, HostTLS: hostTLS})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Info().Name != "gen" {
				t.Fatalf("the host's own connection: %+v", c.Info())
			}
			rc := c.gp.ReattachConfig()
			if rc == nil || rc.Addr == nil {
				t.Fatal("no plugin address")
			}
			addr := rc.Addr
			dial := func(creds credentials.TransportCredentials) error {
				conn, err := grpc.NewClient("passthrough:///plugin",
					grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
						var d net.Dialer
						return d.DialContext(ctx, addr.Network(), addr.String())
					}),
					grpc.WithTransportCredentials(creds))
				if err != nil {
					return err
				}
				defer conn.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err = pb.NewPluginClient(conn).GetInfo(ctx, &pb.GetInfoRequest{})
				// The socket is there and answers: a refusal must come
				// from the handshake, not from a wrong address.
				if err != nil && (strings.Contains(err.Error(), "no such file") || strings.Contains(err.Error(), "connection refused")) {
					t.Fatalf("the test dials a wrong address: %v", err)
				}
				return err
			}
			if err := dial(insecure.NewCredentials()); err == nil {
				t.Errorf("a plaintext connection was served")
			}
			noCert := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
			if err := dial(noCert); err == nil {
				t.Errorf("a TLS connection without a client certificate was served")
			}
			otherCert := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{strangerCert(t)}})
			if err := dial(otherCert); err == nil {
				t.Errorf("a TLS connection with a client certificate the host did not make was served")
			}
		})
	}
}

// TestPinnedDigestMismatchIsNotStarted: a binary whose sha256 differs from
// its pin is refused before it is executed (it would write its marker file
// as it starts); with the right digest it starts.
func TestPinnedDigestMismatchIsNotStarted(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "started")
	exe, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	io.Copy(h, exe)
	exe.Close()
	right := h.Sum(nil)
	wrong := append([]byte(nil), right...)
	wrong[0] ^= 1

	_, err = Launch(LaunchConfig{Cmd: servingCmd(mark), SHA256: wrong, Label: "plugin gen", StartTimeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "does not match its pinned sha256") {
		t.Fatalf("a binary that does not match its pin: got %v", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("the binary ran although its digest did not match its pin")
	}
	c, err := Launch(LaunchConfig{Cmd: servingCmd(mark), SHA256: right, Label: "plugin gen", StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("with its own digest: %v", err)
	}
	c.Close()
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the marker of a started plugin is missing: %v", err)
	}
}

// markEnv names a file the test binary creates when it starts, so a test
// can tell whether a binary was executed.
const markEnv = "SLUICE_SDK_TEST_MARK"

func init() {
	if p := os.Getenv(markEnv); p != "" {
		os.WriteFile(p, []byte(strings.Join(os.Environ(), "\n")+"\n"), 0o644)
	}
}

// TestPluginEnvironmentIsTheHostsChoice is a regression test: go-plugin
// added the host's whole environment to the one the host chose for a plugin,
// so pipeline variables (SLUICE_VAR_*) and the caller's secrets reached every
// plugin process. A plugin now gets exactly Cmd.Env (or, when nil, the
// host's environment, as exec.Cmd does).
func TestPluginEnvironmentIsTheHostsChoice(t *testing.T) {
	t.Setenv("SLUICE_VAR_signing_key", "host-only-secret")
	mark := filepath.Join(t.TempDir(), "env")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{"SLUICE_SDK_TEST_SERVE=1", markEnv + "=" + mark, "CHOSEN=yes"}
	c, err := Launch(LaunchConfig{Cmd: cmd, Label: "plugin gen", StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	env, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "host-only-secret") || !strings.Contains(string(env), "CHOSEN=yes") {
		t.Errorf("the plugin's environment:\n%s", env)
	}
	// nil inherits, as with exec.Cmd.
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	t.Setenv("SLUICE_SDK_TEST_SERVE", "1")
	t.Setenv(markEnv, mark)
	c, err = Launch(LaunchConfig{Cmd: cmd, Label: "plugin gen", StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if env, _ := os.ReadFile(mark); !strings.Contains(string(env), "host-only-secret") {
		t.Errorf("a nil Env did not inherit the host's environment")
	}
}

// strangerCert returns a client certificate the host did not make.
func strangerCert(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
