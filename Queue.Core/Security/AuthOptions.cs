using Queue.Core.Hosting;

namespace Queue.Core.Security;

/// <summary>Section <c>Auth</c>: API keys.</summary>
public sealed class AuthOptions
{
    /// <summary>How long a resolved key is remembered in memory. Revocation takes effect everywhere within this time
    /// (at once in the process that revoked it). Workers poll hard, so a lookup per request would double database load.</summary>
    public int KeyCacheSeconds { get; set; } = 5;
}

public sealed class AuthOptionsRules() : OptionsRules<AuthOptions>("Auth")
{
    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(AuthOptions o) =>
        [(nameof(o.KeyCacheSeconds), o.KeyCacheSeconds is >= 0 and <= 300, "must be 0 to 300")];
}
