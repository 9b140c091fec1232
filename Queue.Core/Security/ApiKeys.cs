using System.Security.Cryptography;
using System.Text;
using Dapper;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Security;

public enum KeyRole
{
    Customer,
    Worker,
}

/// <summary>Who a bearer key belongs to. <see cref="TenantId"/> is null for worker keys.</summary>
/// <param name="RateLimit">The tenant's requests per second (0: no limit), cached with the key so rate limiting needs no query.</param>
public sealed record Principal(long KeyId, KeyRole Role, long? TenantId, string? TenantName, int RateLimit = 0, int RateBurst = 0);

/// <summary>A key as the one moment it is visible: <see cref="Secret"/> is never stored and never shown again.</summary>
public sealed record IssuedKey(long Id, string Secret, string Prefix, KeyRole Role, long? TenantId);

public sealed record KeyInfo(long Id, long? TenantId, string Role, string Prefix, string? Label, DateTime CreatedAt, DateTime? RevokedAt);

/// <param name="cache">The process's resolved keys; a new one by default (tests pass small bounds).</param>
public sealed class ApiKeyService(MySqlDataSource db, TimeProvider clock, IOptions<AuthOptions> options, KeyCache? cache = null)
{
    private readonly KeyCache cache = cache ?? new KeyCache();

    public async Task<IssuedKey> IssueAsync(KeyRole role, long? tenantId, string? label, CancellationToken ct)
    {
        if (role == KeyRole.Customer && tenantId is null)
        {
            throw new ValidationException(new Dictionary<string, string[]> { ["tenant"] = ["a customer key belongs to a tenant"] });
        }
        // 192 random bits, base64url: far above the 128 the design asks for, and safe in a header.
        var secret = (role == KeyRole.Customer ? "qc_" : "qw_") + Base64Url(RandomNumberGenerator.GetBytes(24));
        var prefix = secret[..10];
        await using var conn = await db.OpenConnectionAsync(ct);
        var id = await conn.ExecuteScalarAsync<long>(new CommandDefinition(TenantSql.InsertKey, new
        {
            TenantId = role == KeyRole.Worker ? null : tenantId,
            Role = role == KeyRole.Customer ? "customer" : "worker",
            Prefix = prefix,
            Hash = Hash(secret),
            Label = label,
            Now = clock.GetUtcNow().UtcDateTime,
        }, cancellationToken: ct));
        return new IssuedKey(id, secret, prefix, role, role == KeyRole.Worker ? null : tenantId);
    }

    /// <summary>How long a key lookup may wait for the database before the request answers 503 with Retry-After.</summary>
    private static readonly TimeSpan LookupTimeout = TimeSpan.FromSeconds(3);

    private async Task<KeyRow?> KeyRowAsync(byte[] hash, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        return await conn.QuerySingleOrDefaultAsync<KeyRow>(new CommandDefinition(TenantSql.KeyByHash, new { Hash = hash }, cancellationToken: ct));
    }

    /// <summary>Resolves a presented key, or null when it is unknown or revoked.</summary>
    public async Task<Principal?> ResolveAsync(string presented, CancellationToken ct)
    {
        if (presented.Length is < 10 or > 200)
        {
            return null;
        }
        var now = Environment.TickCount64;
        var hash = Hash(presented);
        var cacheKey = Convert.ToBase64String(hash);
        if (cache.TryGet(cacheKey, now, out var hit))
        {
            return hit;
        }
        KeyRow? row;
        using (var abandon = CancellationTokenSource.CreateLinkedTokenSource(ct))
        {
            try
            {
                // Authentication runs before the request timeout applies: unbounded, a lookup on a hung database waited
                // for the driver's own timeouts (32 s in DatabaseHangTests, once the key had left the cache).
                row = await KeyRowAsync(hash, abandon.Token).WaitAsync(LookupTimeout, ct);
            }
            catch (TimeoutException ex)
            {
                await abandon.CancelAsync(); // the lookup left behind gives its connection back as soon as it can
                throw new ServiceBusyException("the database did not answer the key lookup in time", ex);
            }
        }
        Principal? principal = null;
        if (row is not null && row.RevokedAt is null && CryptographicOperations.FixedTimeEquals(row.Hash, hash))
        {
            principal = new Principal(row.Id, row.Role == "worker" ? KeyRole.Worker : KeyRole.Customer, row.TenantId, row.TenantName, row.RateLimit ?? 0, row.RateBurst ?? 0);
        }
        var ttl = options.Value.KeyCacheSeconds * 1000L;
        if (ttl > 0)
        {
            cache.Add(cacheKey, principal, now + ttl, now);
        }
        return principal;
    }

    public async Task<bool> RevokeAsync(long keyId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var changed = await conn.ExecuteAsync(new CommandDefinition(TenantSql.RevokeKey, new { Id = keyId, Now = clock.GetUtcNow().UtcDateTime }, cancellationToken: ct));
        cache.Clear();
        return changed > 0;
    }

    public async Task<IReadOnlyList<KeyInfo>> ListAsync(long? tenantId, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        return (await conn.QueryAsync<KeyInfo>(new CommandDefinition(TenantSql.KeysOfTenant, new { TenantId = tenantId }, cancellationToken: ct))).AsList();
    }

    public static byte[] Hash(string secret) => SHA256.HashData(Encoding.UTF8.GetBytes(secret));

    private static string Base64Url(byte[] bytes) => Convert.ToBase64String(bytes).TrimEnd('=').Replace('+', '-').Replace('/', '_');

    private sealed record KeyRow(long Id, long? TenantId, string Role, byte[] Hash, DateTime? RevokedAt, string? TenantName, int? RateLimit, int? RateBurst);
}
