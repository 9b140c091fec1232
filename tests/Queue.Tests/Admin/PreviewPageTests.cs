using System.Globalization;
using System.Net;

namespace Queue.Tests.Admin;

/// <summary>The Admin's /preview page (issue 38): behind the technicians' login, next positions beside today's, tenants.</summary>
public sealed class PreviewPageTests(AdminFixture fx) : IClassFixture<AdminFixture>
{
    [Fact]
    public async Task The_preview_page_sends_a_visitor_who_is_not_signed_in_to_the_login()
    {
        using var anonymous = fx.Admin.Browser();
        using var r = await anonymous.Http.GetAsync(new Uri("/preview?mode=smallest", UriKind.Relative));
        Assert.Equal(HttpStatusCode.Redirect, r.StatusCode);
        Assert.Contains("/Account/Login", r.Headers.Location!.OriginalString, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_preview_page_shows_the_next_rewrite_beside_today_marks_big_moves_and_sums_each_tenant()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var jobs = new List<long>();
        for (var i = 0; i < 12; i++)
        {
            jobs.Add(await fx.Seed.JobAsync(tenant.Id, $"mid-{i}", 3));
        }
        var tiny = await fx.Seed.JobAsync(tenant.Id, "tiny", 1);
        // Today the tiny job is last (as an oldest-first ordering has it); smallest-first puts it first: 12 places up.
        await fx.Seed.ExecuteAsync("UPDATE ordering SET value = 900000, mode = 'oldest' WHERE job_id = @Id", new { Id = tiny });
        var lanes = await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM ordering");

        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync("/preview?mode=smallest&policy=seed");

        Assert.NotNull(page.QuerySelector("header nav a[href='/preview']"));
        var next = page.QuerySelectorAll("#next tbody tr").ToList();
        Assert.Equal(tiny.ToString(CultureInfo.InvariantCulture), next[0].GetAttribute("data-job"));
        Assert.Equal("1", next[0].QuerySelector(".pos")!.TextContent.Trim());
        Assert.Contains("moved", next[0].GetAttribute("class") ?? "", StringComparison.Ordinal);
        Assert.Contains("up 12", next[0].QuerySelector(".today")!.TextContent, StringComparison.Ordinal);
        Assert.DoesNotContain("moved", next[1].GetAttribute("class") ?? "", StringComparison.Ordinal);
        Assert.Equal(tiny.ToString(CultureInfo.InvariantCulture), page.QuerySelectorAll("#today tbody tr")[^1].GetAttribute("data-job"));
        var row = page.QuerySelector($"#tenants tr[data-tenant='{tenant.Name}']")!;
        var cells = row.QuerySelectorAll("td").Select(c => c.TextContent.Trim()).ToList();
        Assert.Equal(["13", "37"], cells[1..3]);
        Assert.Equal("selected", page.QuerySelector("#mode option[value=smallest]")!.GetAttribute("selected"));
        // Seeing ahead changes nothing.
        Assert.Equal(lanes, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM ordering"));
        Assert.Equal(900000L, await fx.Seed.ScalarAsync<long>("SELECT MIN(value) FROM ordering WHERE job_id = @Id", new { Id = tiny }));
    }
}
