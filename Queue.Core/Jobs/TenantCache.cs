using System.Collections.Concurrent;
using Queue.Core.Security;

namespace Queue.Core.Jobs;

/// <summary>Tenant settings (default tasks) remembered briefly, so a submission does not read the tenants row every time.</summary>
public sealed class TenantCache(TenantService tenants, TimeProvider clock)
{
    public static readonly TimeSpan Lifetime = TimeSpan.FromSeconds(5);

    /// <summary>Past this many tenants a cache of them starts again empty, so it stays bounded whatever the number of tenants.</summary>
    public const int MaxTenants = 10_000;

    private readonly ConcurrentDictionary<long, (Tenant? Tenant, DateTimeOffset Until)> cache = new();

    public async Task<Tenant?> GetAsync(long tenantId, CancellationToken ct)
    {
        var now = clock.GetUtcNow();
        if (cache.TryGetValue(tenantId, out var hit) && hit.Until > now)
        {
            return hit.Tenant;
        }
        var tenant = await tenants.GetAsync(tenantId, ct);
        if (cache.Count > MaxTenants)
        {
            cache.Clear();
        }
        cache[tenantId] = (tenant, now + Lifetime);
        return tenant;
    }
}
