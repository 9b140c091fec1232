using System.Collections.Concurrent;

namespace Queue.Core.Security;

/// <summary>
/// Resolved bearer keys, remembered for <see cref="AuthOptions.KeyCacheSeconds"/> by the key's SHA-256 (the secret
/// itself is not kept in memory). Known and unknown keys are bounded apart: a flood of made-up keys fills and empties
/// only the unknown side, and never pushes out a real key, whose worker would then cost a query per call again. When
/// the known side is full, expired entries make room; a key that still finds none is served uncached.
/// </summary>
public sealed class KeyCache(int maxKnown = 100_000, int maxUnknown = 10_000)
{
    private readonly ConcurrentDictionary<string, (Principal Principal, long ExpiresAt)> known = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, long> unknown = new(StringComparer.Ordinal);

    /// <summary>Whether <paramref name="hash"/> was resolved within its cache time; <paramref name="principal"/> is null for a key found unknown.</summary>
    public bool TryGet(string hash, long now, out Principal? principal)
    {
        if (known.TryGetValue(hash, out var hit) && hit.ExpiresAt > now)
        {
            principal = hit.Principal;
            return true;
        }
        principal = null;
        return unknown.TryGetValue(hash, out var until) && until > now;
    }

    public void Add(string hash, Principal? principal, long expiresAt, long now)
    {
        if (principal is null)
        {
            if (unknown.Count >= maxUnknown)
            {
                unknown.Clear();
            }
            unknown[hash] = expiresAt;
            return;
        }
        unknown.TryRemove(hash, out _);
        if (known.Count >= maxKnown && !known.ContainsKey(hash))
        {
            foreach (var (k, v) in known)
            {
                if (v.ExpiresAt <= now)
                {
                    known.TryRemove(k, out _);
                }
            }
            if (known.Count >= maxKnown)
            {
                return;
            }
        }
        known[hash] = (principal, expiresAt);
    }

    /// <summary>Forgets everything: a revocation in this process applies at once.</summary>
    public void Clear()
    {
        known.Clear();
        unknown.Clear();
    }
}
