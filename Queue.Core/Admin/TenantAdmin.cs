using Dapper;
using MySqlConnector;
using Queue.Core.Security;
using Queue.Core.Sql;

using Queue.Core.Audit;

namespace Queue.Core.Admin;

/// <summary>Tenant and key management for technicians: the Core services plus an audit entry for every change.</summary>
public sealed class TenantAdmin(MySqlDataSource db, TenantService tenants, ApiKeyService keys, TimeProvider clock)
{
    public const int MaxLabelLength = 200;

    public async Task<Tenant> CreateAsync(Actor actor, string name, TenantSettings settings, CancellationToken ct)
    {
        var tenant = await tenants.CreateAsync(name, settings, ct);
        await WriteAsync(actor, AuditActions.TenantCreate, tenant.Id, null, AuditLog.Json(Snapshot(tenant)), ct);
        return tenant;
    }

    /// <returns>False when there is no such tenant.</returns>
    public async Task<bool> UpdateAsync(Actor actor, long tenantId, TenantSettings settings, CancellationToken ct)
    {
        var before = await tenants.GetAsync(tenantId, ct);
        if (before is null)
        {
            return false;
        }
        await tenants.UpdateAsync(tenantId, settings, ct);
        var after = await tenants.GetAsync(tenantId, ct);
        await WriteAsync(actor, AuditActions.TenantUpdate, tenantId, AuditLog.Json(Snapshot(before)), AuditLog.Json(Snapshot(after!)), ct);
        return true;
    }

    /// <summary>Issues a key; the secret in the result is shown once and never stored or logged.</summary>
    public async Task<IssuedKey> IssueKeyAsync(Actor actor, KeyRole role, long? tenantId, string? label, CancellationToken ct)
    {
        label = string.IsNullOrWhiteSpace(label) ? null : label.Trim();
        if (label is { Length: > MaxLabelLength })
        {
            throw new ValidationException(new Dictionary<string, string[]> { ["label"] = [$"Keep the label to {MaxLabelLength} characters or fewer."] });
        }
        var key = await keys.IssueAsync(role, tenantId, label, ct);
        var snapshot = new KeySnapshot(key.Id, role == KeyRole.Customer ? "customer" : "worker", key.Prefix, label, key.TenantId, null);
        await WriteAsync(actor, AuditActions.KeyIssue, key.TenantId, null, AuditLog.Json(snapshot), ct);
        return key;
    }

    /// <summary>
    /// Revokes a key of the given owner: a customer key of <paramref name="tenantId"/>, or a worker key when it is null.
    /// A key of another owner is treated as missing.
    /// </summary>
    public async Task<ActionOutcome> RevokeKeyAsync(Actor actor, long keyId, long? tenantId, CancellationToken ct)
    {
        KeyInfo? key;
        await using (var conn = await db.OpenConnectionAsync(ct))
        {
            key = await conn.QuerySingleOrDefaultAsync<KeyInfo>(new CommandDefinition(AdminSql.KeyById, new { Id = keyId }, cancellationToken: ct));
        }
        if (key is null || key.TenantId != tenantId)
        {
            return new ActionOutcome(ActionStatus.NotFound, $"There is no key {keyId} here.");
        }
        if (key.RevokedAt is not null)
        {
            return new ActionOutcome(ActionStatus.Unchanged, $"Key {key.Prefix}… was already revoked.");
        }
        await keys.RevokeAsync(keyId, ct);
        var before = new KeySnapshot(key.Id, key.Role, key.Prefix, key.Label, key.TenantId, null);
        var after = before with { RevokedAt = clock.GetUtcNow().UtcDateTime };
        await WriteAsync(actor, AuditActions.KeyRevoke, key.TenantId, AuditLog.Json(before), AuditLog.Json(after), ct);
        return new ActionOutcome(ActionStatus.Done, $"Key {key.Prefix}… is revoked; requests with it now get 401.");
    }

    private async Task WriteAsync(Actor actor, string action, long? tenantId, string? before, string? after, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        await AuditLog.WriteAsync(conn, null, clock.GetUtcNow().UtcDateTime, actor, action, null, tenantId, null, before, after, ct);
    }

    private static TenantSnapshot Snapshot(Tenant t) =>
        new(t.Name, t.DefaultTaskList, t.Weight, t.RateLimit, t.RateBurst, t.MaxAttempts);
}
