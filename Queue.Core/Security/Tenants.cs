using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Security;

public sealed record Tenant(long Id, string Name, string DefaultTasks, int Weight, int RateLimit, int RateBurst, int MaxAttempts, DateTime CreatedAt)
{
    public IReadOnlyList<string> DefaultTaskList => DefaultTasks.Split(',', StringSplitOptions.RemoveEmptyEntries);
}

public sealed record TenantSettings(IReadOnlyList<string> DefaultTasks, int Weight = 1, int RateLimit = 1000, int RateBurst = 2000, int MaxAttempts = 5);

public sealed class TenantService(MySqlDataSource db, TimeProvider clock)
{
    public async Task<Tenant> CreateAsync(string name, TenantSettings settings, CancellationToken ct)
    {
        var errors = TenantValidation.Tenant(name, settings);
        if (errors.Count > 0)
        {
            throw new ValidationException(errors);
        }
        await using var conn = await db.OpenConnectionAsync(ct);
        try
        {
            var id = await conn.ExecuteScalarAsync<long>(new CommandDefinition(TenantSql.InsertTenant, Row(0, name, settings), cancellationToken: ct));
            return (await GetAsync(id, ct))!;
        }
        catch (MySqlException ex) when (ex.ErrorCode == MySqlErrorCode.DuplicateKeyEntry)
        {
            throw new ValidationException(new Dictionary<string, string[]> { ["name"] = [$"a tenant named '{name}' already exists"] });
        }
    }

    public async Task<Tenant?> GetAsync(long id, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        return await conn.QuerySingleOrDefaultAsync<Tenant>(new CommandDefinition(TenantSql.TenantById, new { Id = id }, cancellationToken: ct));
    }

    public async Task<Tenant?> FindAsync(string name, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        return await conn.QuerySingleOrDefaultAsync<Tenant>(new CommandDefinition(TenantSql.TenantByName, new { Name = name }, cancellationToken: ct));
    }

    public async Task<IReadOnlyList<Tenant>> ListAsync(CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        return (await conn.QueryAsync<Tenant>(new CommandDefinition(TenantSql.AllTenants, cancellationToken: ct))).AsList();
    }

    public async Task UpdateAsync(long id, TenantSettings settings, CancellationToken ct)
    {
        var errors = TenantValidation.Settings(settings);
        if (errors.Count > 0)
        {
            throw new ValidationException(errors);
        }
        await using var conn = await db.OpenConnectionAsync(ct);
        await conn.ExecuteAsync(new CommandDefinition(TenantSql.UpdateTenant, Row(id, null, settings), cancellationToken: ct));
    }

    /// <summary>The arguments of an insert (which takes no id) and of an update (which takes no name); Dapper sends
    /// only the ones a statement names.</summary>
    private TenantRow Row(long id, string? name, TenantSettings settings) =>
        new(id, name, string.Join(',', settings.DefaultTasks), settings.Weight, settings.RateLimit, settings.RateBurst, settings.MaxAttempts,
            clock.GetUtcNow().UtcDateTime);

    private sealed record TenantRow(long Id, string? Name, string DefaultTasks, int Weight, int RateLimit, int RateBurst, int MaxAttempts, DateTime Now);
}
