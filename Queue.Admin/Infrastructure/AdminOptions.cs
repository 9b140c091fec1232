using Queue.Core.Hosting;

namespace Queue.Admin.Infrastructure;

/// <summary>Section <c>Admin</c>.</summary>
public sealed class AdminOptions
{
    /// <summary>
    /// Cookies go over HTTPS only unless this says the deployment has none (./run.sh on one machine, tests): a
    /// technician's session must never cross a network in clear text by accident.
    /// </summary>
    public bool AllowHttp { get; set; }
}

public sealed class AdminOptionsRules() : OptionsRules<AdminOptions>("Admin")
{
    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(AdminOptions o) => [];
}
