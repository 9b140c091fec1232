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

    /// <summary>
    /// One sign-in attempt. Attempts on one login take numbered turns: the technician row is locked for the whole
    /// attempt (password check included), so parallel guesses are counted one after another and none is checked against
    /// a stale count. The <see cref="MaxFailures"/>th failure in a row locks the account for <see cref="LockoutTime"/>;
    /// once a lockout has run out, the count starts again from zero. A guess that cannot get its turn within the lock
    /// wait timeout counts as locked out: many parallel guesses on one login look like an attack.
    /// </summary>
    public async Task<(TechnicianSignIn Result, Technician? Technician)> SignInAsync(string login, string password, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        await using var tx = await conn.BeginTransactionAsync(System.Data.IsolationLevel.ReadCommitted, ct);
        Row? row;
        try
        {
            row = await conn.QuerySingleOrDefaultAsync<Row>(new CommandDefinition(TenantSql.LockTechnicianByLogin, new { Login = login }, tx, cancellationToken: ct));
        }
        catch (MySqlException e) when (e.ErrorCode is MySqlErrorCode.LockWaitTimeout or MySqlErrorCode.LockDeadlock)
        {
            return (TechnicianSignIn.LockedOut, null);
        }
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
        // A lockout that has run out wipes the count: the next failure is the first of a new run, not the sixth.
        var failures = row.LockedUntil is null ? row.FailedAttempts : 0;
        var tech = new Technician(row.Id, row.Login);
        var verdict = Hasher.VerifyHashedPassword(tech, row.PasswordHash, password);
        if (verdict == PasswordVerificationResult.Failed)
        {
            failures++;
            var locked = failures >= MaxFailures;
            await conn.ExecuteAsync(new CommandDefinition(TenantSql.TechnicianLoginFailed,
                new { row.Id, Failures = locked ? 0 : failures, LockedUntil = locked ? now + LockoutTime : (DateTime?)null }, tx, cancellationToken: ct));
            await tx.CommitAsync(CancellationToken.None);
            return (locked ? TechnicianSignIn.LockedOut : TechnicianSignIn.Failed, null);
        }
        var hash = verdict == PasswordVerificationResult.SuccessRehashNeeded ? Hasher.HashPassword(tech, password) : row.PasswordHash;
        await conn.ExecuteAsync(new CommandDefinition(TenantSql.TechnicianLoginSucceeded, new { row.Id, Now = now, PasswordHash = hash }, tx, cancellationToken: ct));
        await tx.CommitAsync(CancellationToken.None);
        return (TechnicianSignIn.Success, tech);
    }

    private static readonly string DummyHash = Hasher.HashPassword(new Technician(0, ""), "not-a-real-password");

    private sealed record Row(long Id, string Login, string PasswordHash, int FailedAttempts, DateTime? LockedUntil);
}
