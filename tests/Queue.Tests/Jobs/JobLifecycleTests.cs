using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Security.Cryptography;
using System.Text;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

public sealed class JobLifecycleTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task Closing_is_harmless_twice_makes_an_empty_job_done_and_gets_409_on_a_cancelled_job()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var id = await http.OpenJobAsync();
        await http.UploadRawAsync(id, [1, 2, 3]);
        var r = await http.PostAsync(U($"/jobs/{id}/close"), null);
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Equal("closed", (await r.BodyAsync()).GetProperty("state").GetString());
        Assert.Equal(HttpStatusCode.OK, (await http.PostAsync(U($"/jobs/{id}/close"), null)).StatusCode);

        var empty = await http.OpenJobAsync();
        Assert.Equal("done", (await (await http.PostAsync(U($"/jobs/{empty}/close"), null)).BodyAsync()).GetProperty("state").GetString());

        var cancelled = await http.OpenJobAsync();
        await http.DeleteAsync(U($"/jobs/{cancelled}"));
        await AssertProblemAsync(await http.PostAsync(U($"/jobs/{cancelled}/close"), null), HttpStatusCode.Conflict);
    }

    [Fact]
    public async Task Cancelling_turns_ready_items_cancelled_removes_the_lanes_and_a_second_cancel_changes_nothing()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.CreateJobAsync(new
        {
            name = "to-cancel",
            tasks = new[] { "text" },
            documents = new[] { new { name = "a", content = B64("a") }, new { name = "b", content = B64("b") }, new { name = "c", content = B64("c") } },
        });
        var id = job.GetProperty("id").GetInt64();
        // One item is out on a live lease: it is not cancelled and may still complete.
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        {
            await Dapper.SqlMapper.ExecuteAsync(conn,
                "UPDATE items SET state = 1, due_at = @Until, attempts = 1 WHERE job_id = @id ORDER BY id LIMIT 1",
                new { id, Until = DateTime.UtcNow.AddMinutes(5) });
        }
        var r = await http.DeleteAsync(U($"/jobs/{id}"));
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var status = await r.BodyAsync();
        Assert.Equal("cancelled", status.GetProperty("state").GetString());
        Assert.Equal(2, status.GetProperty("items").GetProperty("cancelled").GetInt64());
        Assert.Equal(1, status.GetProperty("items").GetProperty("leased").GetInt64());
        Assert.Equal(0, status.GetProperty("items").GetProperty("ready").GetInt64());
        Assert.Equal(System.Text.Json.JsonValueKind.Null, status.GetProperty("position").ValueKind);
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM ordering WHERE job_id = @id", new { id }));
        Assert.Equal(2, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @id AND state = 4", new { id }));

        var again = await http.DeleteAsync(U($"/jobs/{id}"));
        Assert.Equal(HttpStatusCode.OK, again.StatusCode);
        Assert.Equal(2, (await again.BodyAsync()).GetProperty("items").GetProperty("cancelled").GetInt64());
    }
}
