using System.Diagnostics;
using System.Text.Json;
using Dapper;
using Queue.Core.Security;
using Queue.Tests.Scheduler;

namespace Queue.Tests.Admin;

/// <summary>
/// <c>Queue.Admin preview</c> (issue 38): the ordering the next rewrite would write, overrides winning, the order
/// claims would follow under tenant-fair, and nothing written. Each test has a database of its own: the oldest-first
/// ranks count every job in it.
/// </summary>
public sealed class PreviewCliTests
{
    private static async Task<(int Exit, string Out, string Err)> RunAsync(FreshDatabase db, params string[] args)
    {
        using var stdout = new StringWriter();
        using var stderr = new StringWriter();
        var exit = await Queue.Admin.Cli.TryRunAsync(["preview", .. args, "ConnectionStrings:Queue=" + db.ConnectionString], stdout, stderr);
        return (exit ?? -1, stdout.ToString(), stderr.ToString());
    }

    private static async Task<JsonElement> JsonAsync(FreshDatabase db, params string[] args)
    {
        var (exit, output, error) = await RunAsync(db, [.. args, "--json"]);
        Assert.True(exit == 0, $"exit {exit}: {error}");
        using var doc = JsonDocument.Parse(output);
        return doc.RootElement.Clone();
    }

    private static long[] JobIds(JsonElement preview) => [.. preview.GetProperty("positions").EnumerateArray().Select(p => p.GetProperty("jobId").GetInt64())];

    /// <summary>Jobs a (5 items), b (2), c (9) and d (3) of one tenant, c with a stored override of -10.</summary>
    private static async Task<(string Tenant, long A, long B, long C, long D)> FourJobsAsync(FreshDatabase db)
    {
        var (tenant, _) = await db.NewCustomerAsync(settings: new TenantSettings(["text"]));
        var seed = new AdminSeed(db.DataSource);
        var a = await seed.JobAsync(tenant.Id, "a", 5);
        var b = await seed.JobAsync(tenant.Id, "b", 2);
        var c = await seed.JobAsync(tenant.Id, "c", 9);
        var d = await seed.JobAsync(tenant.Id, "d", 3);
        await seed.ExecuteAsync("""
            INSERT INTO overrides (job_id, priority, active, reason, technician_id, expires_at, created_at, updated_at)
            VALUES (@C, -10, 1, 'escalation', 1, UTC_TIMESTAMP(6) + INTERVAL 1 DAY, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
            """, new { C = c });
        return (tenant.Name, a, b, c, d);
    }

    [Fact]
    public async Task Preview_json_shows_the_next_smallest_first_ordering_with_stored_and_given_overrides_winning()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var (tenant, a, b, c, d) = await FourJobsAsync(db);

        var p = await JsonAsync(db, "--mode", "smallest", "--policy", "seed", "--override", $"{a}=-5");

        Assert.Equal("smallest", p.GetProperty("mode").GetString());
        Assert.Equal("seed", p.GetProperty("policy").GetString());
        Assert.True(p.GetProperty("generatedAt").TryGetDateTime(out _));
        Assert.Equal([c, a, b, d], JobIds(p));
        var first = p.GetProperty("positions")[0];
        Assert.Equal(1, first.GetProperty("position").GetInt32());
        Assert.Equal(tenant, first.GetProperty("tenant").GetString());
        Assert.Equal("c", first.GetProperty("name").GetString());
        Assert.Equal(9, first.GetProperty("itemsLeft").GetInt64());
        Assert.Equal(-10, first.GetProperty("value").GetInt64());
        Assert.Equal("override", first.GetProperty("reason").GetString());
        Assert.Equal(-5, p.GetProperty("positions")[1].GetProperty("value").GetInt64());
        Assert.Equal([2L, 3L], p.GetProperty("positions").EnumerateArray().Skip(2).Select(x => x.GetProperty("value").GetInt64()));
        var t = p.GetProperty("tenants").EnumerateArray().Single();
        Assert.Equal((tenant, 4L, 19L, 1.0), (t.GetProperty("tenant").GetString(), t.GetProperty("jobs").GetInt64(), t.GetProperty("items").GetInt64(), t.GetProperty("share").GetDouble()));
        Assert.True(t.TryGetProperty("etaFirst", out _) && t.TryGetProperty("etaLast", out _));
    }

    [Fact]
    public async Task Preview_of_oldest_first_ranks_by_age_as_the_rewrite_does_counting_overridden_jobs_in_the_ranks()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var (_, a, b, c, d) = await FourJobsAsync(db);

        var p = await JsonAsync(db, "--mode", "oldest", "--policy", "seed", "--override", $"{d}=-1", "--top", "3");

        Assert.Equal([c, d, a], JobIds(p));
        Assert.Equal([-10L, -1L, 10000L], p.GetProperty("positions").EnumerateArray().Select(x => x.GetProperty("value").GetInt64()));
        Assert.Equal("oldest #1", p.GetProperty("positions")[2].GetProperty("reason").GetString());
        // b is the second oldest: 10005, past the --top of 3, so not listed.
        Assert.DoesNotContain(b, JobIds(p));
    }

    [Fact]
    public async Task Preview_under_tenant_fair_interleaves_the_tenants_by_weight_after_the_override_jobs()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var (heavy, _) = await db.NewCustomerAsync(settings: new TenantSettings(["text"]));
        var (light, _) = await db.NewCustomerAsync(settings: new TenantSettings(["text"]));
        var seed = new AdminSeed(db.DataSource);
        await seed.ExecuteAsync("UPDATE tenants SET weight = 2 WHERE id = @Id", new { heavy.Id });
        var x1 = await seed.JobAsync(heavy.Id, "x1", 2);
        var x2 = await seed.JobAsync(heavy.Id, "x2", 2);
        var x3 = await seed.JobAsync(heavy.Id, "x3", 2);
        var y1 = await seed.JobAsync(light.Id, "y1", 2);
        var y2 = await seed.JobAsync(light.Id, "y2", 2);
        var y3 = await seed.JobAsync(light.Id, "y3", 2);

        var p = await JsonAsync(db, "--mode", "oldest", "--policy", "tenant-fair", "--override", $"{y3}=5");

        // y3's override serves it first. Then turns: heavy's claims have passes 0, 0.5, 1, ... and light's 2, 3, ...
        // (y3's two claims count against light): x1 (0), x2 (1), x3 (2; heavy's lower id wins the tie), y1 (2), y2 (4).
        Assert.Equal([y3, x1, x2, x3, y1, y2], JobIds(p));
        var shares = p.GetProperty("tenants").EnumerateArray().ToDictionary(t => t.GetProperty("tenant").GetString()!, t => t.GetProperty("share").GetDouble());
        Assert.Equal(0.6667, shares[heavy.Name], 3);
        Assert.Equal(0.3333, shares[light.Name], 3);

        var seedOrder = await JsonAsync(db, "--mode", "oldest", "--policy", "seed");
        Assert.Equal([x1, x2, x3, y1, y2, y3], JobIds(seedOrder));
    }

    [Fact]
    public async Task Preview_writes_nothing_no_lane_override_audit_entry_or_rewrite_log()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var (_, a, _, _, _) = await FourJobsAsync(db);
        const string State = """
            SELECT CONCAT_WS('|',
              (SELECT GROUP_CONCAT(CONCAT(job_id, task, value, mode, blocked, available_at, updated_at) ORDER BY job_id, task) FROM ordering),
              (SELECT GROUP_CONCAT(CONCAT(id, priority, active, updated_at) ORDER BY id) FROM overrides),
              (SELECT COUNT(*) FROM audit_log), (SELECT COUNT(*) FROM rewrite_log), (SELECT band FROM ordering_band))
            """;
        var before = await new AdminSeed(db.DataSource).ScalarAsync<string>(State);

        foreach (var mode in new[] { "smallest", "oldest" })
        {
            foreach (var policy in new[] { "seed", "tenant-fair" })
            {
                var (exit, output, error) = await RunAsync(db, "--mode", mode, "--policy", policy, "--override", $"{a}=-99");
                Assert.True(exit == 0, error);
                Assert.Contains("pos", output, StringComparison.Ordinal);
            }
        }

        Assert.Equal(before, await new AdminSeed(db.DataSource).ScalarAsync<string>(State));
    }

    [Theory]
    [InlineData("frobnicate")]
    [InlineData("preview", "--mode", "sideways")]
    [InlineData("preview", "--override", "7")]
    [InlineData("preview", "--top")]
    [InlineData("preview", "--colour", "red")]
    public async Task An_unknown_command_or_a_bad_flag_prints_usage_and_exits_2(params string[] args)
    {
        using var stdout = new StringWriter();
        using var stderr = new StringWriter();
        Assert.Equal(2, await Queue.Admin.Cli.TryRunAsync(args, stdout, stderr));
        Assert.Contains("usage: Queue.Admin", stderr.ToString(), StringComparison.Ordinal);
        Assert.Equal("", stdout.ToString());
    }

    [Theory]
    [InlineData]
    [InlineData("--urls", "http://127.0.0.1:5999")]
    [InlineData("Admin:AllowHttp=true")]
    public async Task The_web_host_s_own_arguments_still_start_the_host(params string[] args)
    {
        using var stdout = new StringWriter();
        using var stderr = new StringWriter();
        Assert.Null(await Queue.Admin.Cli.TryRunAsync(args, stdout, stderr));
    }

    [Fact]
    public async Task The_built_admin_given_an_unknown_command_exits_2_with_usage_and_never_listens()
    {
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        psi.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "Queue.Admin.dll"));
        psi.ArgumentList.Add("frobnicate");
        psi.Environment["ASPNETCORE_URLS"] = "http://127.0.0.1:" + Queue.Local.PrivateMariaDb.FreePort().ToString(System.Globalization.CultureInfo.InvariantCulture);
        using var p = Process.Start(psi)!;
        var output = p.StandardOutput.ReadToEndAsync();
        var error = p.StandardError.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        try
        {
            await p.WaitForExitAsync(cts.Token);
        }
        catch (OperationCanceledException)
        {
            p.Kill(entireProcessTree: true);
            Assert.Fail("Queue.Admin frobnicate was still running after 60 s: it started the host");
        }
        Assert.Equal(2, p.ExitCode);
        Assert.Contains("usage: Queue.Admin", await error, StringComparison.Ordinal);
        Assert.DoesNotContain("Now listening", await output + await error, StringComparison.Ordinal);
        Assert.DoesNotContain("Exception", await error, StringComparison.Ordinal);
    }
}
