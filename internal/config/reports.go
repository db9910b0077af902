package config

import (
	"net/url"
	"regexp"
	"strings"
)

// Reports is where the runs' reports are served from and kept: a separate origin, and an
// S3-compatible bucket instead of the data folder.
type Reports struct {
	// URL is a separate origin serving reports (no cookies of the API's); empty serves them
	// from the server's PublicURL.
	URL string // VERDICT_REPORTS_URL, without a trailing slash
	// Reports in an S3-compatible bucket instead of the data folder: set with S3Bucket, empty
	// keeps them on disk. S3Endpoint is the service's URL (its scheme decides TLS); S3PathStyle
	// addresses the bucket as a path rather than a host name (most self-hosted stores).
	S3Bucket    string // VERDICT_S3_BUCKET
	S3Endpoint  string // VERDICT_S3_ENDPOINT, without a trailing slash
	S3Region    string // VERDICT_S3_REGION
	S3AccessKey string // VERDICT_S3_ACCESS_KEY
	S3SecretKey string // VERDICT_S3_SECRET_KEY
	S3PathStyle bool   // VERDICT_S3_PATH_STYLE [false]
}

// decodeReports reads and checks the report settings; the reports' origin must be on another
// host name than publicURL's.
func decodeReports(d *decoder, publicURL string) Reports {
	r := Reports{URL: d.str("VERDICT_REPORTS_URL", ""), S3Bucket: d.str("VERDICT_S3_BUCKET", ""),
		S3Endpoint: d.str("VERDICT_S3_ENDPOINT", ""), S3Region: d.str("VERDICT_S3_REGION", ""),
		S3AccessKey: d.str("VERDICT_S3_ACCESS_KEY", ""), S3SecretKey: d.str("VERDICT_S3_SECRET_KEY", ""),
		S3PathStyle: d.boolean("VERDICT_S3_PATH_STYLE", false)}
	if r.URL != "" {
		r.URL = strings.TrimRight(r.URL, "/")
		u, err := url.Parse(r.URL)
		pub, _ := url.Parse(publicURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/"):
			d.bad("VERDICT_REPORTS_URL", "want an http(s) origin such as https://reports.example.com, got %q", r.URL)
		case pub != nil && strings.EqualFold(u.Hostname(), pub.Hostname()):
			// Cookies ignore ports: only another host name keeps the API's cookies from reports.
			d.bad("VERDICT_REPORTS_URL", "must be on another host name than VERDICT_PUBLIC_URL")
		}
	}
	r.checkS3(d)
	return r
}

// bucketName is the shape of an S3 bucket's name that every store accepts: 3 to 63 lower-case
// letters, digits, dots and hyphens, starting and ending with a letter or digit.
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// checkS3 validates the report bucket's settings: all or none of them.
func (r *Reports) checkS3(d *decoder) {
	if r.S3Bucket == "" {
		for name, v := range map[string]string{"VERDICT_S3_ENDPOINT": r.S3Endpoint, "VERDICT_S3_REGION": r.S3Region,
			"VERDICT_S3_ACCESS_KEY": r.S3AccessKey, "VERDICT_S3_SECRET_KEY": r.S3SecretKey} {
			if v != "" {
				d.bad(name, "set without VERDICT_S3_BUCKET: set the bucket to keep reports in object storage, or unset it")
			}
		}
		return
	}
	if !bucketName.MatchString(r.S3Bucket) || strings.Contains(r.S3Bucket, "..") {
		d.bad("VERDICT_S3_BUCKET", "want a bucket name (3 to 63 lower-case letters, digits, dots and hyphens), got %q", r.S3Bucket)
	}
	r.S3Endpoint = strings.TrimRight(r.S3Endpoint, "/")
	if r.S3Endpoint == "" {
		d.bad("VERDICT_S3_ENDPOINT", "required with VERDICT_S3_BUCKET: the object store's URL, such as https://s3.eu-west-1.amazonaws.com or http://127.0.0.1:9000")
	} else if u, err := url.Parse(r.S3Endpoint); err == nil && u.User != nil {
		d.bad("VERDICT_S3_ENDPOINT", "must not hold credentials: set VERDICT_S3_ACCESS_KEY and VERDICT_S3_SECRET_KEY")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
		d.bad("VERDICT_S3_ENDPOINT", "want the object store's http(s) URL without a path, such as http://127.0.0.1:9000, got %q", r.S3Endpoint)
	}
	if r.S3AccessKey == "" || r.S3SecretKey == "" {
		d.bad("VERDICT_S3_ACCESS_KEY", "VERDICT_S3_ACCESS_KEY and VERDICT_S3_SECRET_KEY are both required with VERDICT_S3_BUCKET")
	}
	if strings.ContainsAny(r.S3Region, " \t\r\n/") {
		d.bad("VERDICT_S3_REGION", "want a region name such as us-east-1, got %q", r.S3Region)
	}
}
