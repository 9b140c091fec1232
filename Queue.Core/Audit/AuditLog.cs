using System.Text.Json;
using System.Text.Json.Serialization;
using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Audit;

/// <summary>Who acts: the signed-in technician. The login is what the audit log shows.</summary>
public sealed record Actor(long TechnicianId, string Login);

public static class AuditActions
{
    public const string OverrideSet = "override.set";
    public const string OverrideClear = "override.clear";
    /// <summary>The Scheduler switched off an override whose time was up (actor <c>scheduler</c>).</summary>
    public const string OverrideExpire = "override.expire";
    public const string Block = "job.block";
    public const string Unblock = "job.unblock";
    public const string Requeue = "job.requeue";
    public const string Cancel = "job.cancel";
    public const string TenantCreate = "tenant.create";
    public const string TenantUpdate = "tenant.update";
    public const string KeyIssue = "key.issue";
    public const string KeyRevoke = "key.revoke";
}

/// <summary>A job as the audit log records it before and after an action.</summary>
public sealed record JobSnapshot(
    string State,
    bool Blocked,
    long Active,
    long ItemsDead,
    long ItemsCancelled,
    long? Value,
    string? Mode,
    OverrideSnapshot? Override,
    long? ItemsChanged = null);

public sealed record OverrideSnapshot(long Priority, string Reason, DateTime ExpiresAt, string SetBy);

public sealed record TenantSnapshot(string Name, IReadOnlyList<string> DefaultTasks, int Weight, int RateLimit, int RateBurst, int MaxAttempts);

public sealed record KeySnapshot(long Id, string Role, string Prefix, string? Label, long? TenantId, DateTime? RevokedAt);

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web, DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull)]
[JsonSerializable(typeof(JobSnapshot))]
[JsonSerializable(typeof(TenantSnapshot))]
[JsonSerializable(typeof(KeySnapshot))]
internal sealed partial class AuditJsonContext : JsonSerializerContext;

public static class AuditLog
{
    public static string Json(JobSnapshot s) => JsonSerializer.Serialize(s, AuditJsonContext.Default.JobSnapshot);

    public static string Json(TenantSnapshot s) => JsonSerializer.Serialize(s, AuditJsonContext.Default.TenantSnapshot);

    public static string Json(KeySnapshot s) => JsonSerializer.Serialize(s, AuditJsonContext.Default.KeySnapshot);

    /// <summary>Writes one entry, inside the caller's transaction when there is one, so an action and its record commit together.</summary>
    public static Task WriteAsync(MySqlConnection conn, MySqlTransaction? tx, DateTime at, Actor actor, string action,
        long? jobId, long? tenantId, string? reason, string? beforeJson, string? afterJson, CancellationToken ct) =>
        conn.ExecuteAsync(new CommandDefinition(AdminSql.InsertAudit, new
        {
            At = at,
            Actor = actor.Login,
            Action = action,
            JobId = jobId,
            TenantId = tenantId,
            Reason = reason,
            BeforeJson = beforeJson,
            AfterJson = afterJson,
        }, tx, cancellationToken: ct));
}
