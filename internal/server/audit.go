package server

import (
	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth/audit"
)

// auditing is the server's audit log: off unless --audit-log-path is set.
type auditing struct{ log *audit.Log }

func openAuditing(cfg Config) (auditing, error) {
	if cfg.AuditLogPath == "" {
		return auditing{}, nil
	}
	log, err := audit.Open(cfg.AuditLogPath, cfg.AuditLogRotation)
	if err != nil {
		return auditing{}, err
	}
	return auditing{log: log}, nil
}

// configure makes the API server record into the log.
func (a auditing) configure(c *apiserver.Config) {
	if a.log != nil {
		c.AuditSink, c.AuditPolicy = a.log.Sink(), a.log.Policy()
	}
}

func (a auditing) close() error {
	if a.log == nil {
		return nil
	}
	return a.log.Close()
}
