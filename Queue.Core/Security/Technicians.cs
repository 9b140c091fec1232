using Dapper;
using Microsoft.AspNetCore.Identity;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Security;

public sealed record Technician(long Id, string Login);

public enum TechnicianSignIn
{
    Success,
    Failed,
    LockedOut,
}

public sealed class TechnicianService(MySqlDataSource db, TimeProvider clock)
{
    /// <summary>Failures in a row before the account locks, and for how long.</summary>
    public const int MaxFailures = 5;

    public static readonly TimeSpan LockoutTime = TimeSpan.FromMinutes(15);

    private static readonly PasswordHasher<Technician> Hasher = new();

    public async Task<Technician> CreateAsync(string login, string password, CancellationToken ct)
    {
        if (string.IsNullOrWhiteSpace(login) || login.Length > 100)
        {
            throw new ValidationException(new Dictionary<string, string[]> { ["login"] = ["use 1 to 100 characters"] });
        }
        if (password.Length < 12)
        {
            throw new ValidationException(new Dictionary<string, string[]> { ["password"] = ["use at least 12 characters"] });
        }
        var tech = new Technician(0, login);
        await using var conn = await db.OpenConnectionAsync(ct);
        var id = await conn.ExecuteScalarAsync<long>(new CommandDefinition(TenantSql.InsertTechnician, new
        {
            Login = login,
            PasswordHash = Hasher.HashPassword(tech, password),
            Now = clock.GetUtcNow().UtcDateTime,
        }, cancellationToken: ct));
        return tech with { Id = id };
    }

    public async Task<(TechnicianSignIn Result, Technician? Technician)> SignInAsync(string login, string password, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var row = await conn.QuerySingleOrDefaultAsync<Row>(new CommandDefinition(TenantSql.TechnicianByLogin, new { Login = login }, cancellationToken: ct));
        var now = clock.GetUtcNow().UtcDateTime;
        if (row is null)
        {
            // Hash anyway so an unknown login takes as long as a wrong password.
            Hasher.VerifyHashedPassword(new Technician(0, login), DummyHash, password);
            return (TechnicianSignIn.Failed, null);
        }
        if (row.LockedUntil is { } until && until > now)
        {
            return (TechnicianSignIn.LockedOut, null);
        }
        var tech = new Technician(row.Id, row.Login);
        var verdict = Hasher.VerifyHashedPassword(tech, row.PasswordHash, password);
        if (verdict == PasswordVerificationResult.Failed)
        {
            await conn.ExecuteAsync(new CommandDefinition(TenantSql.TechnicianLoginFailed,
                new { row.Id, MaxFailures, LockUntil = now + LockoutTime }, cancellationToken: ct));
            return (row.FailedAttempts + 1 >= MaxFailures ? TechnicianSignIn.LockedOut : TechnicianSignIn.Failed, null);
        }
        var hash = verdict == PasswordVerificationResult.SuccessRehashNeeded ? Hasher.HashPassword(tech, password) : row.PasswordHash;
        await conn.ExecuteAsync(new CommandDefinition(TenantSql.TechnicianLoginSucceeded, new { row.Id, Now = now, PasswordHash = hash }, cancellationToken: ct));
        return (TechnicianSignIn.Success, tech);
    }

    private static readonly string DummyHash = Hasher.HashPassword(new Technician(0, ""), "not-a-real-password");

    private sealed record Row(long Id, string Login, string PasswordHash, int FailedAttempts, DateTime? LockedUntil);
}
