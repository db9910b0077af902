// Package s3env gives tests a bucket of their own in the test object store (MinIO). It is a
// package of its own because the S3 client is large: only the tests that use the store link it.
package s3env

import (
	"context"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"verdict/internal/testenv"
)

// S3 is a fresh, empty bucket of the test object store (MinIO) for one test.
type S3 struct {
	Endpoint  string // http://host:port
	AccessKey string
	SecretKey string
	Bucket    string
	Client    *minio.Client // for looking at the bucket independently of Verdict's store
}

// Bucket creates a bucket of its own for this test in the MinIO that scripts/services.sh
// starts (VERDICT_TEST_S3 and its credentials); the bucket and what is left in it are removed
// when the test ends. The test fails when the store is not configured or does not answer.
func Bucket(t testing.TB) *S3 {
	t.Helper()
	testenv.SkipShort(t, "MinIO")
	endpoint := os.Getenv("VERDICT_TEST_S3")
	if endpoint == "" {
		t.Fatal("VERDICT_TEST_S3 is not set: the S3 tests need the MinIO that scripts/services.sh installs and starts " +
			`(run the tests with scripts/test.sh, or eval "$(scripts/services.sh)" first)`)
	}
	testenv.Reachable(t, "MinIO (VERDICT_TEST_S3)", endpoint)
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatalf("VERDICT_TEST_S3 %q: %v", endpoint, err)
	}
	s := &S3{Endpoint: endpoint, AccessKey: os.Getenv("VERDICT_TEST_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("VERDICT_TEST_S3_SECRET_KEY"), Bucket: "verdict-test-" + testenv.Suffix()}
	if s.AccessKey == "" || s.SecretKey == "" {
		t.Fatal("VERDICT_TEST_S3_ACCESS_KEY and VERDICT_TEST_S3_SECRET_KEY must be set with VERDICT_TEST_S3 (scripts/services.sh prints them)")
	}
	s.Client, err = minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Secure: u.Scheme == "https", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Client.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating the test bucket in MinIO at %s: %v", endpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		objects := s.Client.ListObjects(ctx, s.Bucket, minio.ListObjectsOptions{Recursive: true})
		for e := range s.Client.RemoveObjects(ctx, s.Bucket, objects, minio.RemoveObjectsOptions{}) {
			t.Errorf("removing %s from the test bucket: %v", e.ObjectName, e.Err)
		}
		if err := s.Client.RemoveBucket(ctx, s.Bucket); err != nil {
			t.Errorf("removing the test bucket: %v", err)
		}
	})
	return s
}

// Keys lists the bucket's object keys under prefix.
func (s *S3) Keys(t testing.TB, prefix string) []string {
	t.Helper()
	var keys []string
	for o := range s.Client.ListObjects(context.Background(), s.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}
