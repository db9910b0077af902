package app

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	"verdict/internal/api"
	"verdict/internal/config"
	"verdict/internal/report"
)

// reportStore is where the runs' reports are kept, with what the runner and the readiness
// check need of it: a bucket when VERDICT_S3_BUCKET is set (nothing of the reports in the data
// folder), else the data folder.
type reportStore struct {
	report.Store
	dir   func(orgID, taskID string) string                              // FSStore's folders, for parsing
	fsys  func(ctx context.Context, orgID, taskID string) (fs.FS, error) // S3Store's objects, for parsing
	check *api.Checker                                                   // nil: nothing beyond the data folder
}

// bucketCheckTimeout bounds the check at start that the bucket answers.
const bucketCheckTimeout = 15 * time.Second

func newReportStore(ctx context.Context, cfg config.Reports, dataDir string) (reportStore, error) {
	if cfg.S3Bucket == "" {
		s, err := report.NewFSStore(dataDir)
		if err != nil {
			return reportStore{}, err
		}
		return reportStore{Store: s, dir: s.LocalDir}, nil
	}
	s, err := report.NewS3Store(report.S3Options{Endpoint: cfg.S3Endpoint, Region: cfg.S3Region, Bucket: cfg.S3Bucket,
		AccessKey: cfg.S3AccessKey, SecretKey: cfg.S3SecretKey, PathStyle: cfg.S3PathStyle})
	if err != nil {
		return reportStore{}, err
	}
	// A wrong bucket, endpoint or key is a configuration error: said at start, not at the
	// first run's end.
	cctx, cancel := context.WithTimeout(ctx, bucketCheckTimeout)
	defer cancel()
	if err := s.Check(cctx); err != nil {
		return reportStore{}, fmt.Errorf("VERDICT_S3_BUCKET %s at %s: %w", cfg.S3Bucket, cfg.S3Endpoint, err)
	}
	return reportStore{Store: s, fsys: s.FS, check: &api.Checker{Name: "reports", Check: s.Check}}, nil
}
