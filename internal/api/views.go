package api

import (
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

// JSON shapes of the SPEC's resources. Timestamps are RFC 3339 in UTC, with milliseconds.

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func userView(u *domain.User) obj {
	return obj{"id": u.ID, "email": u.Email, "name": u.Name, "role": u.Role, "status": u.Status,
		"lastLoginAt": tsPtr(u.LastLoginAt), "createdAt": ts(u.CreatedAt)}
}

func limitsView(o *domain.Organization) obj {
	l := o.Limits()
	return obj{"maxProjects": l.MaxProjects, "maxTestRuns": l.MaxTestRuns, "maxUsers": l.MaxUsers,
		"maxConcurrentRuns": l.MaxConcurrentRuns, "maxStorageBytes": l.MaxStorageBytes,
		"currentStorageUsedBytes": o.StorageUsedBytes}
}

func orgView(o *domain.Organization, userCount int) obj {
	return obj{"id": o.ID, "name": o.Name, "slug": o.Slug, "plan": o.Plan, "limits": limitsView(o),
		"userCount": userCount, "userLimit": o.Limits().MaxUsers, "aiAnalysisEnabled": o.AIAnalysisEnabled,
		"features": o.Features, "allowedImages": nonNil(o.AllowedImages), "createdAt": ts(o.CreatedAt)}
}

func sessionView(s *identity.Session) obj {
	return obj{"token": s.Token, "user": obj{"id": s.User.ID, "email": s.User.Email, "name": s.User.Name,
		"role": s.User.Role, "organizationId": s.Org.ID, "organizationName": s.Org.Name}}
}

func invitationView(i *domain.Invitation, now time.Time) obj {
	return obj{"id": i.ID, "email": i.Email, "role": i.Role, "status": i.EffectiveStatus(now),
		"invitedBy": i.InvitedBy, "invitedByName": i.InvitedByName, "expiresAt": ts(i.ExpiresAt), "createdAt": ts(i.CreatedAt)}
}

func apiKeyView(k *domain.APIKey) obj {
	return obj{"id": k.ID, "name": k.Name, "prefix": k.Prefix, "createdAt": ts(k.CreatedAt), "lastUsedAt": tsPtr(k.LastUsedAt)}
}
