package config

import (
	"strings"
	"testing"
)

// s3Env is a valid environment with the reports in a bucket.
func s3Env() map[string]string {
	env := base()
	env["VERDICT_S3_BUCKET"] = "verdict-reports"
	env["VERDICT_S3_ENDPOINT"] = "http://127.0.0.1:9000/"
	env["VERDICT_S3_ACCESS_KEY"] = "AKIAEXAMPLE"
	env["VERDICT_S3_SECRET_KEY"] = "secret-key-value"
	return env
}

func TestS3Settings(t *testing.T) {
	c, err := LoadFrom(base())
	if err != nil || c.Reports.S3Bucket != "" {
		t.Fatalf("default: %v %q", err, c.Reports.S3Bucket)
	}
	env := s3Env()
	env["VERDICT_S3_REGION"] = "eu-west-1"
	env["VERDICT_S3_PATH_STYLE"] = "true"
	if c, err = LoadFrom(env); err != nil {
		t.Fatal(err)
	}
	if c.Reports.S3Bucket != "verdict-reports" || c.Reports.S3Endpoint != "http://127.0.0.1:9000" || c.Reports.S3Region != "eu-west-1" ||
		!c.Reports.S3PathStyle || c.Reports.S3AccessKey != "AKIAEXAMPLE" || c.Reports.S3SecretKey != "secret-key-value" {
		t.Fatalf("config: %+v", c)
	}
}

func TestS3SettingsRefused(t *testing.T) {
	for name, c := range map[string]struct {
		set  map[string]string
		want string
	}{
		"bucket shape":        {map[string]string{"VERDICT_S3_BUCKET": "Reports_Bucket"}, "VERDICT_S3_BUCKET: want a bucket name"},
		"bucket short":        {map[string]string{"VERDICT_S3_BUCKET": "ab"}, "VERDICT_S3_BUCKET"},
		"bucket dots":         {map[string]string{"VERDICT_S3_BUCKET": "a..b"}, "VERDICT_S3_BUCKET"},
		"no endpoint":         {map[string]string{"VERDICT_S3_ENDPOINT": ""}, "VERDICT_S3_ENDPOINT: required with VERDICT_S3_BUCKET"},
		"endpoint host only":  {map[string]string{"VERDICT_S3_ENDPOINT": "127.0.0.1:9000"}, "VERDICT_S3_ENDPOINT: want the object store's http(s) URL"},
		"endpoint scheme":     {map[string]string{"VERDICT_S3_ENDPOINT": "ftp://s3.example.com"}, "VERDICT_S3_ENDPOINT"},
		"endpoint path":       {map[string]string{"VERDICT_S3_ENDPOINT": "https://s3.example.com/bucket"}, "VERDICT_S3_ENDPOINT"},
		"endpoint with creds": {map[string]string{"VERDICT_S3_ENDPOINT": "https://user:pw@s3.example.com"}, "must not hold credentials"},
		"no access key":       {map[string]string{"VERDICT_S3_ACCESS_KEY": ""}, "VERDICT_S3_ACCESS_KEY and VERDICT_S3_SECRET_KEY are both required"},
		"no secret key":       {map[string]string{"VERDICT_S3_SECRET_KEY": ""}, "VERDICT_S3_SECRET_KEY are both required"},
		"region":              {map[string]string{"VERDICT_S3_REGION": "eu west"}, "VERDICT_S3_REGION"},
		"path style":          {map[string]string{"VERDICT_S3_PATH_STYLE": "sometimes"}, "VERDICT_S3_PATH_STYLE: want true or false"},
		"endpoint, no bucket": {map[string]string{"VERDICT_S3_BUCKET": ""}, "VERDICT_S3_ENDPOINT: set without VERDICT_S3_BUCKET"},
	} {
		t.Run(name, func(t *testing.T) {
			env := s3Env()
			for k, v := range c.set {
				env[k] = v
			}
			_, err := LoadFrom(env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v: err %v, want one containing %q", c.set, err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret-key-value") {
				t.Fatalf("the error shows the secret key: %v", err)
			}
		})
	}
}
