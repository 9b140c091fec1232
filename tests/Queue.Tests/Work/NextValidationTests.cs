using System.Net;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;

namespace Queue.Tests.Work;

public sealed class NextValidationTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Theory]
    [InlineData("{\"max\":0}", "max")]
    [InlineData("{\"max\":101}", "max")]
    [InlineData("{\"wait\":31}", "wait")]
    [InlineData("{\"wait\":-1}", "wait")]
    [InlineData("{\"lease\":9}", "lease")]
    [InlineData("{\"lease\":3601}", "lease")]
    [InlineData("{\"tasks\":[\"Bad Name\"]}", "tasks")]
    [InlineData("{\"priority\":1}", "priority")]
    public async Task Out_of_range_or_unknown_fields_get_400_naming_the_field(string body, string field)
    {
        using var http = fx.Worker();
        var r = await http.PostAsync(new Uri("/next", UriKind.Relative), new StringContent(body, Encoding.UTF8, "application/json"));
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        var errors = (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("errors");
        Assert.Contains(errors.EnumerateObject(), e => e.Name.EndsWith(field, StringComparison.Ordinal));
    }

    [Fact]
    public async Task Every_bad_field_is_named_at_once()
    {
        using var http = fx.Worker();
        var r = await http.PostAsJsonAsync("/next", new { max = 0, wait = 99, lease = 1, worker = new string('w', 201), tasks = Enumerable.Range(0, 21).Select(i => $"t{i}") });
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        var errors = (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("errors");
        Assert.Equal(["lease", "max", "tasks", "wait", "worker"], errors.EnumerateObject().Select(e => e.Name).Order(StringComparer.Ordinal));
    }

    [Fact]
    public async Task An_empty_or_absent_body_takes_the_defaults()
    {
        using var http = fx.Worker();
        var empty = await http.PostAsync(new Uri("/next", UriKind.Relative), null);
        Assert.True(empty.StatusCode is HttpStatusCode.NoContent or HttpStatusCode.OK, empty.StatusCode.ToString());
        var json = await http.PostAsync(new Uri("/next", UriKind.Relative), new StringContent("{}", Encoding.UTF8, "application/json"));
        Assert.True(json.StatusCode is HttpStatusCode.NoContent or HttpStatusCode.OK, json.StatusCode.ToString());
    }
}
