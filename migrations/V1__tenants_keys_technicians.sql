-- Tenants, API keys and technicians. Keys and passwords are stored only as hashes.
CREATE TABLE tenants (
  id            BIGINT       NOT NULL AUTO_INCREMENT,
  name          VARCHAR(64)  CHARACTER SET ascii NOT NULL,
  default_tasks VARCHAR(200) CHARACTER SET ascii NOT NULL DEFAULT 'default',  -- comma-separated task names
  weight        INT          NOT NULL DEFAULT 1,
  rate_limit    INT          NOT NULL DEFAULT 1000,   -- requests per second; 0 means unlimited
  rate_burst    INT          NOT NULL DEFAULT 2000,
  max_attempts  INT          NOT NULL DEFAULT 5,
  created_at    DATETIME(6)  NOT NULL,
  updated_at    DATETIME(6)  NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY ux_tenants_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE api_keys (
  id          BIGINT      NOT NULL AUTO_INCREMENT,
  tenant_id   BIGINT      NULL,                        -- NULL for worker keys, which serve every tenant
  role        ENUM('customer','worker') NOT NULL,
  prefix      VARCHAR(16) CHARACTER SET ascii NOT NULL, -- shown in lists so a key can be recognised without the secret
  key_hash    BINARY(32)  NOT NULL,                     -- SHA-256 of the whole key
  label       VARCHAR(200) NULL,
  created_at  DATETIME(6) NOT NULL,
  revoked_at  DATETIME(6) NULL,
  last_used_at DATETIME(6) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY ux_api_keys_hash (key_hash),
  KEY ix_api_keys_tenant (tenant_id, id),
  CONSTRAINT fk_api_keys_tenant FOREIGN KEY (tenant_id) REFERENCES tenants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE technicians (
  id              BIGINT       NOT NULL AUTO_INCREMENT,
  login           VARCHAR(100) NOT NULL,
  password_hash   VARCHAR(255) CHARACTER SET ascii NOT NULL,  -- ASP.NET Core Identity PasswordHasher (PBKDF2)
  failed_attempts INT          NOT NULL DEFAULT 0,
  locked_until    DATETIME(6)  NULL,
  created_at      DATETIME(6)  NOT NULL,
  last_login_at   DATETIME(6)  NULL,
  PRIMARY KEY (id),
  UNIQUE KEY ux_technicians_login (login)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
