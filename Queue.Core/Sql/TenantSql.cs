namespace Queue.Core.Sql;

/// <summary>Tenants, API keys and technicians.</summary>
public static class TenantSql
{
    public const string InsertTenant = """
        INSERT INTO tenants (name, default_tasks, weight, rate_limit, rate_burst, max_attempts, created_at, updated_at)
        VALUES (@Name, @DefaultTasks, @Weight, @RateLimit, @RateBurst, @MaxAttempts, @Now, @Now);
        SELECT LAST_INSERT_ID();
        """;

    public const string TenantColumns = """
        id AS Id, name AS Name, default_tasks AS DefaultTasks, weight AS Weight, rate_limit AS RateLimit,
        rate_burst AS RateBurst, max_attempts AS MaxAttempts, created_at AS CreatedAt
        """;

    public const string TenantById = "SELECT " + TenantColumns + " FROM tenants WHERE id = @Id";

    public const string TenantByName = "SELECT " + TenantColumns + " FROM tenants WHERE name = @Name";

    public const string AllTenants = "SELECT " + TenantColumns + " FROM tenants ORDER BY name";

    public const string UpdateTenant = """
        UPDATE tenants SET default_tasks = @DefaultTasks, weight = @Weight, rate_limit = @RateLimit,
               rate_burst = @RateBurst, max_attempts = @MaxAttempts, updated_at = @Now
        WHERE id = @Id
        """;

    public const string InsertKey = """
        INSERT INTO api_keys (tenant_id, role, prefix, key_hash, label, created_at)
        VALUES (@TenantId, @Role, @Prefix, @Hash, @Label, @Now);
        SELECT LAST_INSERT_ID();
        """;

    /// <summary>The lookup is by hash, which is unique; the constant-time compare afterwards guards the index lookup.</summary>
    public const string KeyByHash = """
        SELECT k.id AS Id, k.tenant_id AS TenantId, k.role AS Role, k.key_hash AS Hash, k.revoked_at AS RevokedAt,
               t.name AS TenantName, t.rate_limit AS RateLimit, t.rate_burst AS RateBurst
        FROM api_keys k LEFT JOIN tenants t ON t.id = k.tenant_id
        WHERE k.key_hash = @Hash
        """;

    public const string RevokeKey = "UPDATE api_keys SET revoked_at = @Now WHERE id = @Id AND revoked_at IS NULL";

    public const string KeysOfTenant = """
        SELECT id AS Id, tenant_id AS TenantId, role AS Role, prefix AS Prefix, label AS Label,
               created_at AS CreatedAt, revoked_at AS RevokedAt
        FROM api_keys WHERE (@TenantId IS NULL AND tenant_id IS NULL) OR tenant_id = @TenantId
        ORDER BY id DESC
        """;

    public const string InsertTechnician = """
        INSERT INTO technicians (login, password_hash, created_at) VALUES (@Login, @PasswordHash, @Now);
        SELECT LAST_INSERT_ID();
        """;

    /// <summary>A sign-in attempt's turn: the technician row locked until the attempt is counted (ux_technicians_login).</summary>
    public const string LockTechnicianByLogin = """
        SELECT id AS Id, login AS Login, password_hash AS PasswordHash, failed_attempts AS FailedAttempts,
               locked_until AS LockedUntil
        FROM technicians WHERE login = @Login FOR UPDATE
        """;

    /// <summary>The count after a failed attempt, decided under LockTechnicianByLogin; a lockout starts the count again. PK.</summary>
    public const string TechnicianLoginFailed = """
        UPDATE technicians SET failed_attempts = @Failures, locked_until = @LockedUntil WHERE id = @Id
        """;

    public const string TechnicianLoginSucceeded = """
        UPDATE technicians SET failed_attempts = 0, locked_until = NULL, last_login_at = @Now, password_hash = @PasswordHash
        WHERE id = @Id
        """;
}
