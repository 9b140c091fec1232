using Dapper;
using Microsoft.Extensions.Options;
using Queue.Core.Security;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

/// <summary>Resolved keys are remembered for Auth:KeyCacheSeconds; made-up keys never push a real one out.</summary>
public sealed class KeyCacheTests(DatabaseFixture fx) : IClassFixture<DatabaseFixture>
{
    private const int MaxUnknown = 50;

    [Fact]
    public async Task A_flood_of_unknown_keys_past_the_bound_leaves_a_known_key_cached()
    {
        var (tenant, secret) = await fx.NewCustomerAsync();
        var keys = new ApiKeyService(fx.DataSource, TimeProvider.System, Options.Create(new AuthOptions { KeyCacheSeconds = 300 }), new KeyCache(maxUnknown: MaxUnknown));
        Assert.Equal(tenant.Id, (await keys.ResolveAsync(secret, default))?.TenantId);

        for (var i = 0; i < 3 * MaxUnknown; i++)
        {
            Assert.Null(await keys.ResolveAsync("qc_made-up-" + Guid.NewGuid().ToString("N"), default));
        }

        // Revoked behind this process's back: only a key still in the cache resolves now.
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync("UPDATE api_keys SET revoked_at = UTC_TIMESTAMP(6) WHERE tenant_id = @Id", new { tenant.Id });
        Assert.Equal(tenant.Id, (await keys.ResolveAsync(secret, default))?.TenantId);
    }

    [Fact]
    public void An_unknown_key_is_remembered_as_unknown_and_a_known_one_as_known_for_the_cache_time()
    {
        var cache = new KeyCache(maxKnown: 10, maxUnknown: 10);
        var principal = new Principal(1, KeyRole.Worker, null, null);
        cache.Add("known", principal, expiresAt: 1_000, now: 0);
        cache.Add("unknown", null, expiresAt: 1_000, now: 0);

        Assert.True(cache.TryGet("known", 999, out var hit));
        Assert.Same(principal, hit);
        Assert.True(cache.TryGet("unknown", 999, out var miss));
        Assert.Null(miss);
        Assert.False(cache.TryGet("known", 1_000, out _));
        Assert.False(cache.TryGet("unknown", 1_000, out _));
        Assert.False(cache.TryGet("never", 0, out _));
    }

    [Fact]
    public void A_full_known_side_makes_room_from_expired_entries_and_otherwise_serves_new_keys_uncached()
    {
        var cache = new KeyCache(maxKnown: 2, maxUnknown: 2);
        var p = new Principal(1, KeyRole.Worker, null, null);
        cache.Add("a", p, expiresAt: 100, now: 0);
        cache.Add("b", p, expiresAt: 1_000, now: 0);

        cache.Add("c", p, expiresAt: 1_000, now: 50); // full, none expired: c is not kept, a and b stay
        Assert.False(cache.TryGet("c", 50, out _));
        Assert.True(cache.TryGet("a", 50, out _));

        cache.Add("c", p, expiresAt: 1_000, now: 200); // a expired: it makes room
        Assert.True(cache.TryGet("c", 200, out _));
        Assert.True(cache.TryGet("b", 200, out _));
    }
}
